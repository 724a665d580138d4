// Files and directories that appear whole or not at all. Every file lockstep writes goes through
// AtomicFile: a temporary file beside the target, written, fsynced and closed with every call checked,
// then renamed over the target and the directory fsynced; a failure removes the temporary file, leaves the
// previous target untouched and throws one Error naming the file and the system's reason.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

class AtomicFile {
 public:
  // Creates "<path>.tmp.<pid>.<n>". Throws NotFoundError when the directory is missing, Error otherwise.
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, close, rename over the target, fsync of the directory. After it the file is durable.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `contents` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, std::string_view contents);

// A directory filled under a temporary name beside `dir` and then swapped in whole: readers see the old
// directory or the new one, never a half-written one. An existing `dir` is replaced only if it is empty or
// holds a file named `marker` (what this kind of directory always contains, such as "config.json"), so a
// wrong path cannot delete someone's unrelated files.
class AtomicDirectory {
 public:
  AtomicDirectory(std::string dir, const std::string& marker);
  // Throws unless `dir` could be replaced: its parent is writable and `dir` is missing, empty or holds
  // `marker`. The constructor checks it too; callers check early, before the work that fills the directory.
  static void check(const std::string& dir, const std::string& marker);
  ~AtomicDirectory();  // removes the temporary directory unless commit() succeeded
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  // Where to write the files now (the temporary directory).
  const std::string& staging() const { return staging_; }
  // Swaps the staging directory in (an atomic exchange when `dir` exists), removes the old one, and
  // fsyncs the parent directory.
  void commit();

 private:
  std::string dir_, staging_;
  bool committed_ = false;
};

// Creates the directory that would hold `path`, and its parents, when missing (TF's checkpoint.save does). Throws
// an Error that names the directory that could not be created and the system's reason.
void make_parent_directories(const std::string& path);
// The same for a worker that writes nothing at `path` itself (a non-chief, where TF's would write its copy and the
// tutorials then remove that directory): a failure is only logged as a warning.
void make_parent_directories_if_possible(const std::string& path);

// The whole of a regular file's bytes. NotFoundError when it is missing or not a regular file, DataLossError when
// reading fails; both name the file.
std::string read_file(const std::string& path);

// `text` without the `blanks` it starts and ends with (a line of a text file, a field).
std::string trim(const std::string& text, const char* blanks = " \t\r\n");

// Fsyncs a directory, so that renames and new entries in it survive a crash.
void sync_directory(const std::string& dir);

// Throws, naming `what`, unless a file can be created in the directory that would hold `path`: a
// check done before work that would otherwise fail only at its end.
void check_writable(const std::string& path, const std::string& what);

// Creates `dir` (and its parents) when missing and throws, naming `what`, unless it is a directory in which
// files can be created: the early check of a directory that later work fills.
void check_directory_writable(const std::string& dir, const std::string& what);

// A durable write in progress on a background thread (an asynchronous checkpoint), alive while it runs. A process
// about to end abruptly (a worker whose job failed) first waits for them, so that a save already under way reaches
// the disk instead of being cut off.
class PendingWrite {
 public:
  PendingWrite();
  ~PendingWrite();
  PendingWrite(const PendingWrite&) = delete;
  PendingWrite& operator=(const PendingWrite&) = delete;
};
// Waits until no PendingWrite is alive, or `timeout` has passed; false when some are still running.
bool wait_for_pending_writes(std::chrono::milliseconds timeout);

}  // namespace lockstep
