// tf.io.gfile on local paths: POSIX calls, paths cleaned as TF cleans them, errno mapped to TF's error classes
// as TF's ErrnoToCode maps it, and a GFile over a stdio FILE*.
#include "lockstep/core/gfile.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "lockstep/core/error.h"

namespace lockstep::io::gfile {
namespace {

// TF's errno-to-status mapping (tsl/platform/errors.cc ErrnoToCode) for the classes lockstep has; the rest
// (TF's Aborted, Cancelled, Unknown) are plain Errors.
ErrorKind kind_of_errno(int err) {
  static const std::pair<ErrorKind, std::vector<int>> kTable[] = {
      {ErrorKind::kNotFound, {ENOENT, ENODEV, ENXIO, ESRCH}},
      {ErrorKind::kAlreadyExists, {EEXIST, EALREADY}},
      {ErrorKind::kPermissionDenied, {EPERM, EACCES, EROFS}},
      {ErrorKind::kFailedPrecondition, {ENOTEMPTY, EISDIR, ENOTDIR, EBUSY, EBADF, ETXTBSY, EPIPE}},
      {ErrorKind::kInvalidArgument, {EINVAL, ENAMETOOLONG, E2BIG, EFAULT, EILSEQ, ESPIPE, ENOTTY}},
      {ErrorKind::kResourceExhausted, {ENOSPC, EDQUOT, EMFILE, ENFILE, EMLINK, ENOMEM, ENOBUFS}},
      {ErrorKind::kOutOfRange, {EFBIG, EOVERFLOW, ERANGE}},
      {ErrorKind::kUnimplemented, {ENOSYS, ENOTSUP, EXDEV}},
      {ErrorKind::kDeadlineExceeded, {ETIMEDOUT}},
      {ErrorKind::kUnavailable, {EAGAIN, EINTR, ENOLCK}},
  };
  for (const auto& [kind, errnos] : kTable)
    if (std::find(errnos.begin(), errnos.end(), err) != errnos.end()) return kind;
  return ErrorKind::kError;
}

std::string_view advice_for(int err) {
  static const std::pair<std::vector<int>, std::string_view> kTable[] = {
      {{ENOENT}, "check the path and that its directory exists"},
      {{EPERM, EACCES, EROFS}, "check the permissions of the path and of its directory"},
      {{EISDIR}, "it is a directory; give a file"},
      {{ENOTDIR}, "a part of the path is a file, not a directory"},
      {{ENOTEMPTY}, "the directory is not empty; remove what it holds first (gfile.rmtree)"},
      {{ENOSPC, EDQUOT}, "free some space and try again"},
      {{EMFILE, ENFILE}, "close some files and try again"},
      {{EXDEV}, "the two paths are on different file systems; copy, then remove"},
  };
  for (const auto& [errnos, advice] : kTable)
    if (std::find(errnos.begin(), errnos.end(), err) != errnos.end()) return advice;
  return {};
}

// "<call>: <the system's reason>; <advice>" as the error class TF raises for `err`.
[[noreturn]] void throw_os_error(int err, const std::string& call, std::string_view advice = {}) {
  if (advice.empty()) advice = advice_for(err);
  raise_error(kind_of_errno(err), make_message(call, ": ", std::strerror(err), advice.empty() ? "" : "; ", advice));
}

// TF's io::CleanPath (Go's path.Clean): no empty or "." parts, ".." resolved lexically, no trailing '/'. The
// empty path stays empty, as TF keeps it, so that it names nothing.
std::string clean(const std::string& path) {
  if (path.empty()) return path;
  const bool rooted = path[0] == '/';
  std::vector<std::string_view> parts;
  const std::string_view whole(path);
  for (size_t begin = 0; begin <= whole.size();) {
    const size_t end = std::min(whole.find('/', begin), whole.size());
    const std::string_view part = whole.substr(begin, end - begin);
    begin = end + 1;
    if (part.empty() || part == ".") continue;
    if (part != "..")
      parts.push_back(part);
    else if (!parts.empty() && parts.back() != "..")
      parts.pop_back();
    else if (!rooted)
      parts.push_back(part);
  }
  std::string out = rooted ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) out.append(i ? "/" : "").append(parts[i]);
  return out.empty() ? "." : out;
}

bool is_dot_or_dotdot(const char* name) {
  return std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0;
}

bool is_link(const std::string& path) {
  struct ::stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The names in directory `dir` without "." and "..", sorted, into `names`; 0 or the errno of the failure.
int read_names(const std::string& dir, std::vector<std::string>& names) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return errno;
  while (const dirent* e = ::readdir(d))
    if (!is_dot_or_dotdot(e->d_name)) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return 0;
}

struct Failure {
  int err = 0;
  std::string path;
};

// Deletes `path` and, for a directory (never a link to one), everything under it, going on past failures as TF
// does. The first failure, or none.
Failure remove_tree(const std::string& path) {
  struct ::stat st;
  if (::lstat(path.c_str(), &st) != 0) return {errno, path};
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0 ? Failure{} : Failure{errno, path};
  std::vector<std::string> names;
  Failure first{read_names(path, names), path};
  for (const std::string& name : names) {
    Failure f = remove_tree(path + "/" + name);
    if (first.err == 0) first = std::move(f);
  }
  if (::rmdir(path.c_str()) != 0 && first.err == 0) first = {errno, path};
  return first;
}

// glob(3) reads directories through this, so that a wildcard never matches "." or ".." (TF lists neither) while
// GLOB_PERIOD lets it match other hidden names (TF's wildcards do).
void* glob_opendir(const char* dir) {
  return ::opendir(dir);
}
void glob_closedir(void* dir) {
  ::closedir(static_cast<DIR*>(dir));
}
dirent* glob_readdir(void* dir) {
  dirent* e;
  while ((e = ::readdir(static_cast<DIR*>(dir))) != nullptr && is_dot_or_dotdot(e->d_name)) {
  }
  return e;
}
int glob_stat(const char* path, struct ::stat* st) {
  return ::stat(path, st);
}
int glob_lstat(const char* path, struct ::stat* st) {
  return ::lstat(path, st);
}

void walk_into(const std::string& top, bool topdown, std::vector<WalkEntry>& out) {
  if (!isdir(top)) return;
  WalkEntry here{top, {}, {}};
  for (const std::string& name : listdir(top))
    (isdir(join(top, name)) ? here.dirnames : here.filenames).push_back(name);
  const std::vector<std::string> subdirs = here.dirnames;
  if (topdown) out.push_back(std::move(here));
  for (const std::string& name : subdirs) {
    const std::string path = join(top, name);
    if (!is_link(path)) walk_into(path, topdown, out);  // a link may lead back up: listed, not entered
  }
  if (!topdown) out.push_back(std::move(here));
}

}  // namespace

bool exists(const std::string& path) {
  const std::string p = clean(path);
  return !p.empty() && ::access(p.c_str(), F_OK) == 0;
}

bool isdir(const std::string& path) {
  const std::string p = clean(path);
  struct ::stat st;
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void makedirs(const std::string& path) {
  const std::string p = clean(path);
  if (p.empty() || isdir(p)) return;
  // Each prefix, from the top, is created or found to be a directory.
  for (size_t end = p.find('/', 1);; end = p.find('/', end + 1)) {
    const std::string prefix = p.substr(0, end);
    if (::mkdir(prefix.c_str(), 0755) != 0) {
      const int err = errno;
      const std::string call = "gfile.makedirs(" + path + ")";
      if (err != EEXIST) throw_os_error(err, call);
      LS_CHECK(isdir(prefix), FailedPreconditionError, call, ": ", prefix,
               " is a file, not a directory; remove it or choose another path");
    }
    if (end == std::string::npos) return;
  }
}

void mkdir(const std::string& path) {
  const std::string p = clean(path);
  if (p.empty() || ::mkdir(p.c_str(), 0755) == 0) return;
  const int err = errno;
  const std::string call = "gfile.mkdir(" + path + ")";
  if (err == EEXIST) {
    LS_CHECK(isdir(p), FailedPreconditionError, call, ": ", path,
             " is a file, not a directory; remove it or choose another path");
    return;
  }
  throw_os_error(err, call, err == ENOENT ? "create its parent first, or use gfile.makedirs" : "");
}

void rmtree(const std::string& path) {
  const std::string call = "gfile.rmtree(" + path + ")";
  LS_CHECK(exists(path), NotFoundError, call, ": ", path.empty() ? "the path is empty" : "it does not exist",
           "; check the path");
  const Failure failure = remove_tree(clean(path));
  if (failure.err != 0) throw_os_error(failure.err, call + ": cannot delete " + failure.path);
}

void remove(const std::string& path) {
  if (::unlink(clean(path).c_str()) == 0) return;
  const int err = errno;
  throw_os_error(err, "gfile.remove(" + path + ")", err == EISDIR ? "use gfile.rmtree for a directory" : "");
}

void rename(const std::string& src, const std::string& dst, bool overwrite) {
  const std::string call = "gfile.rename(" + src + ", " + dst + ")";
  LS_CHECK(overwrite || !exists(dst), AlreadyExistsError, call, ": ", dst,
           " exists; pass overwrite=true to replace it or choose another name");
  if (::rename(clean(src).c_str(), clean(dst).c_str()) != 0) throw_os_error(errno, call);
}

void copy(const std::string& src, const std::string& dst, bool overwrite) {
  const std::string call = "gfile.copy(" + src + ", " + dst + ")";
  LS_CHECK(overwrite || !exists(dst), AlreadyExistsError, call, ": ", dst,
           " exists; pass overwrite=true to replace it or choose another name");
  const std::string from = clean(src), to = clean(dst);
  struct ::stat in_stat, out_stat;
  if (::stat(from.c_str(), &in_stat) != 0) throw_os_error(errno, call);
  LS_CHECK(!S_ISDIR(in_stat.st_mode), InvalidArgumentError, call, ": ", src,
           " is a directory; gfile.copy copies one file (walk the tree to copy each)");
  // TF would truncate a file copied onto itself.
  if (::stat(to.c_str(), &out_stat) == 0 && out_stat.st_dev == in_stat.st_dev && out_stat.st_ino == in_stat.st_ino)
    return;
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw_os_error(errno, call);
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, in_stat.st_mode & 0777);
  int err = out < 0 ? errno : 0;
  while (err == 0) {
    const ssize_t sent = ::sendfile(out, in, nullptr, size_t{1} << 30);
    if (sent == 0) break;
    if (sent < 0 && errno != EINTR) err = errno;
  }
  ::close(in);
  if (out >= 0 && ::close(out) != 0 && err == 0) err = errno;
  if (err != 0) throw_os_error(err, call);
}

std::vector<std::string> glob(const std::string& pattern) {
  const size_t wildcard = pattern.find_first_of("*?[\\");
  if (wildcard == std::string::npos) {
    if (exists(pattern)) return {pattern};
    return {};
  }
  // TF matches a pattern without a directory part in ".", and its results say so.
  const bool in_cwd = pattern.rfind('/', wildcard) == std::string::npos;
  const std::string full = in_cwd ? "./" + pattern : pattern;
  glob_t g{};
  g.gl_opendir = glob_opendir;
  g.gl_readdir = glob_readdir;
  g.gl_closedir = glob_closedir;
  g.gl_stat = glob_stat;
  g.gl_lstat = glob_lstat;
  const int rc = ::glob(full.c_str(), GLOB_PERIOD | GLOB_NOSORT | GLOB_ALTDIRFUNC, nullptr, &g);
  std::vector<std::string> out(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
  ::globfree(&g);
  LS_CHECK(rc == 0 || rc == GLOB_NOMATCH, ResourceExhaustedError, "gfile.glob(", pattern,
           "): out of memory while matching; use a narrower pattern");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> listdir(const std::string& path) {
  const std::string call = "gfile.listdir(" + path + ")";
  LS_CHECK(isdir(path), NotFoundError, call, ": no directory ", path, " (missing, or a file); check the path");
  std::vector<std::string> names;
  if (const int err = read_names(clean(path), names)) throw_os_error(err, call);
  return names;
}

std::vector<WalkEntry> walk(const std::string& top, bool topdown) {
  std::vector<WalkEntry> out;
  walk_into(top, topdown, out);
  return out;
}

FileStatistics stat(const std::string& path) {
  struct ::stat st;
  if (::stat(clean(path).c_str(), &st) != 0) throw_os_error(errno, "gfile.stat(" + path + ")");
  return {static_cast<int64_t>(st.st_size), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
          S_ISDIR(st.st_mode)};
}

std::string detail::join_parts(const std::string_view* parts, size_t count) {
  std::string out(parts[0]);
  for (size_t i = 1; i < count; ++i) {
    const std::string_view part = parts[i];
    if (!part.empty() && part[0] == '/')
      out = part;
    else if (out.empty() || out.back() == '/')
      out += part;
    else
      out.append("/").append(part);
  }
  return out;
}

GFile::GFile(std::string name, std::string mode) : name_(std::move(name)), mode_(std::move(mode)) {
  std::string base = mode_;
  std::erase(base, 'b');
  const std::string call = "gfile.GFile(" + name_ + ", \"" + mode_ + "\")";
  LS_CHECK(base != "r+" && base != "w+" && base != "a+", InvalidArgumentError, call,
           ": read-and-write modes are not supported; open the file once to read and once to write");
  LS_CHECK(base == "r" || base == "w" || base == "a", InvalidArgumentError, call,
           ": mode is not \"r\", \"w\" or \"a\" (optionally with \"b\")");
  readable_ = base == "r";
  writable_ = !readable_;
  file_ = std::fopen(clean(name_).c_str(), base == "r" ? "re" : base == "w" ? "we" : "ae");
  if (file_ == nullptr) throw_os_error(errno, call);
  struct ::stat st;
  // A directory opens for reading; TF's error comes at the first read.
  int err = ::fstat(::fileno(file_), &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : 0;
  // As TF's, tell() in append mode counts from the start of the file.
  if (err == 0 && base == "a" && ::fseeko(file_, 0, SEEK_END) != 0) err = errno;
  if (err != 0) {
    std::fclose(std::exchange(file_, nullptr));
    throw_os_error(err, call);
  }
}

GFile::~GFile() {
  if (file_ != nullptr) std::fclose(file_);
}

GFile::GFile(GFile&& other) noexcept
    : name_(std::move(other.name_)),
      mode_(std::move(other.mode_)),
      file_(std::exchange(other.file_, nullptr)),
      readable_(other.readable_),
      writable_(other.writable_) {}

GFile& GFile::operator=(GFile&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    name_ = std::move(other.name_);
    mode_ = std::move(other.mode_);
    file_ = std::exchange(other.file_, nullptr);
    readable_ = other.readable_;
    writable_ = other.writable_;
  }
  return *this;
}

FILE* GFile::checked(const char* method, Access access) {
  LS_CHECK(file_ != nullptr, FailedPreconditionError, "GFile(", name_, ").", method,
           ": the file is closed; open a new GFile");
  // TF's classes: reading a file opened for writing, or the reverse, is a PermissionDeniedError.
  LS_CHECK(access != Access::kRead || readable_, PermissionDeniedError, "GFile(", name_, ").", method,
           ": the file is open for writing (mode \"", mode_, "\"), not reading; open it with mode \"r\"");
  LS_CHECK(access != Access::kWrite || writable_, PermissionDeniedError, "GFile(", name_, ").", method,
           ": the file is open for reading (mode \"", mode_, "\"), not writing; open it with mode \"w\" or \"a\"");
  return file_;
}

std::string GFile::read(int64_t n) {
  FILE* f = checked("read", Access::kRead);
  LS_CHECK(n >= -1, InvalidArgumentError, "GFile(", name_, ").read(", n,
           "): cannot read a negative number of bytes; pass -1 to read to the end");
  std::string out;
  char buffer[1 << 16];
  size_t wanted = n < 0 ? SIZE_MAX : static_cast<size_t>(n);
  while (wanted > 0) {
    const size_t got = std::fread(buffer, 1, std::min(wanted, sizeof buffer), f);
    out.append(buffer, got);
    wanted -= got;
    if (got == 0) break;
  }
  if (std::ferror(f)) {
    std::clearerr(f);
    throw_os_error(errno, "GFile(" + name_ + ").read");
  }
  return out;
}

std::string GFile::readline() {
  FILE* f = checked("readline", Access::kRead);
  std::string line;
  int c;
  while ((c = std::getc(f)) != EOF) {
    if (c != '\r') line += static_cast<char>(c);
    if (c == '\n') break;
  }
  if (std::ferror(f)) {
    std::clearerr(f);
    throw_os_error(errno, "GFile(" + name_ + ").readline");
  }
  return line;
}

std::vector<std::string> GFile::readlines() {
  std::vector<std::string> lines;
  for (std::string line = readline(); !line.empty(); line = readline()) lines.push_back(std::move(line));
  return lines;
}

void GFile::write(std::string_view data) {
  FILE* f = checked("write", Access::kWrite);
  if (std::fwrite(data.data(), 1, data.size(), f) != data.size()) throw_os_error(errno, "GFile(" + name_ + ").write");
}

void GFile::flush() {
  FILE* f = checked("flush", Access::kAny);
  if (writable_ && std::fflush(f) != 0) throw_os_error(errno, "GFile(" + name_ + ").flush");
}

void GFile::close() {
  if (file_ == nullptr) return;
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw_os_error(errno, "GFile(" + name_ + ").close");
}

void GFile::seek(int64_t offset, int whence) {
  FILE* f = checked("seek", Access::kRead);
  const std::string call = make_message("GFile(", name_, ").seek(", offset, ", ", whence, ")");
  LS_CHECK(whence >= 0 && whence <= 2, InvalidArgumentError, call,
           ": whence must be 0 (start), 1 (current position) or 2 (end)");
  const int64_t end = size();
  const int64_t target = offset + (whence == 1 ? tell() : whence == 2 ? end : 0);
  LS_CHECK(target >= 0, InvalidArgumentError, call, ": position ", target, " is before the start of the file");
  if (::fseeko(f, std::min(target, end), SEEK_SET) != 0) throw_os_error(errno, call);
  LS_CHECK(target <= end, OutOfRangeError, call, ": position ", target, " is past the end of the file (", end,
           " bytes); the position is now the end");
}

int64_t GFile::tell() {
  const int64_t position = ::ftello(checked("tell", Access::kAny));
  if (position < 0) throw_os_error(errno, "GFile(" + name_ + ").tell");
  return position;
}

int64_t GFile::size() {
  if (file_ != nullptr && writable_) flush();
  return gfile::stat(name_).length;
}

}  // namespace lockstep::io::gfile
