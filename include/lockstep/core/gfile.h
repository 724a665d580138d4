// TensorFlow's tf.io.gfile for local paths: the same names, the same results and the same error classes
// (NotFoundError, AlreadyExistsError, PermissionDeniedError, FailedPreconditionError, ...), checked against
// TensorFlow 2.21 by tests/golden/make_gfile_golden.py. No gs:// or other schemes.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::io::gfile {

// Paths are cleaned lexically first, as TF does ("a//b/../c/" is "a/c"); the empty path names nothing.
// Errors name the path as given, the system's reason and what to do.

// True when `path` exists (file or directory). Never throws: any failure to look counts as missing.
bool exists(const std::string& path);
// True when `path` is a directory (or a link to one). Never throws.
bool isdir(const std::string& path);
// Creates `path` and its missing parents; fine if it is a directory already. FailedPreconditionError when it
// or a parent is a file.
void makedirs(const std::string& path);
// Creates the directory `path`; its parent must exist (NotFoundError). Fine if it is a directory already, as in
// TF; unlike TF, a file at `path` is a FailedPreconditionError.
void mkdir(const std::string& path);
// Deletes `path` and everything under it; a plain file or a symbolic link is deleted itself. Links inside are
// removed, never followed (TF follows them). Deletes what it can and then throws the first error.
void rmtree(const std::string& path);
// Deletes the file `path`; a directory is a FailedPreconditionError (use rmtree).
void remove(const std::string& path);
// Renames a file or directory. An existing `dst` is AlreadyExistsError unless `overwrite`.
void rename(const std::string& src, const std::string& dst, bool overwrite = false);
// Copies the file `src` (its permission bits too) to `dst`. An existing `dst` is AlreadyExistsError unless
// `overwrite`; a directory `src` is InvalidArgumentError. Copying a file onto itself leaves it as it is.
void copy(const std::string& src, const std::string& dst, bool overwrite = false);
// The paths matching `pattern` (POSIX glob: * ? [...] [!...] [^...] \c; * matches hidden names too, as in TF).
// A pattern without wildcards gives itself when it exists. A pattern whose directory part is empty gives
// "./name" (as TF). Unreadable or missing directories match nothing. Sorted (TF's order is the directory's).
std::vector<std::string> glob(const std::string& pattern);
// The names in directory `path`, without "." and "..", sorted (TF's order is the directory's). NotFoundError
// when `path` is not a directory.
std::vector<std::string> listdir(const std::string& path);

// One directory of a walk: its path (top joined with the names below it), its subdirectories and its other
// entries, each sorted.
struct WalkEntry {
  std::string dirpath;
  std::vector<std::string> dirnames, filenames;
};
// The tree under `top`, each directory before (topdown) or after its subdirectories. A missing `top` or a file
// gives nothing; an unreadable directory throws. A link to a directory is listed in dirnames but not entered.
std::vector<WalkEntry> walk(const std::string& top, bool topdown = true);

struct FileStatistics {
  int64_t length = 0;      // bytes
  int64_t mtime_nsec = 0;  // since the epoch, nanoseconds (TF rounds down to whole seconds)
  bool is_directory = false;
};
FileStatistics stat(const std::string& path);

namespace detail {
std::string join_parts(const std::string_view* parts, size_t count);
}
// Python's os.path.join: "a" + "b" is "a/b", an absolute part restarts the path, a trailing "" adds a "/".
template <typename... Paths>
std::string join(std::string_view path, const Paths&... paths) {
  const std::string_view parts[] = {path, std::string_view(paths)...};
  return detail::join_parts(parts, 1 + sizeof...(paths));
}

// An open file, as tf.io.gfile.GFile. Modes "r", "w" (truncates), "a" (appends), each with an optional "b"
// that changes nothing (bytes in, bytes out). TF's "r+", "w+" and "a+" are refused with InvalidArgumentError:
// TF implements them with a separate reader and writer ("r+" truncates on the first write).
// Unlike TF, the file is opened here, not at the first read or write, so opening errors come from the
// constructor and "w" creates the file even if nothing is written. Closed by close() or the destructor; call
// close() to see write errors.
class GFile {
 public:
  explicit GFile(std::string name, std::string mode = "r");
  ~GFile();
  GFile(GFile&& other) noexcept;
  GFile& operator=(GFile&& other) noexcept;
  GFile(const GFile&) = delete;
  GFile& operator=(const GFile&) = delete;

  // Up to `n` bytes from the current position (fewer at the end); -1 reads to the end.
  std::string read(int64_t n = -1);
  // The next line with its "\n" ("" at the end). As TF, every "\r" is dropped from it.
  std::string readline();
  std::vector<std::string> readlines();
  void write(std::string_view data);
  // Hands buffered writes to the system (they survive a crash of this process, not of the machine).
  void flush();
  void close();
  // whence: 0 from the start, 1 from the current position, 2 from the end. Readable files only. A position
  // past the end moves to the end and throws OutOfRangeError, a negative one throws InvalidArgumentError.
  void seek(int64_t offset, int whence = 0);
  int64_t tell();
  // The file's length in bytes, writes not yet flushed included.
  int64_t size();
  const std::string& name() const { return name_; }
  const std::string& mode() const { return mode_; }

 private:
  enum class Access { kAny, kRead, kWrite };
  // file_, after checking that it is open and allows `access`; `method` names the call in errors.
  FILE* checked(const char* method, Access access);
  std::string name_, mode_;
  FILE* file_ = nullptr;
  bool readable_ = false, writable_ = false;
};

}  // namespace lockstep::io::gfile
