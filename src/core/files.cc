// Atomic files and directories: temporary name, checked writes, fsync, rename, fsync of the directory.
#include "lockstep/core/files.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <filesystem>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// A unique temporary name beside `path`: two writers in one process (threads) or in two processes (a
// restarted job) never share one.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return make_message(path, ".tmp.", ::getpid(), ".", counter++);
}

std::string parent_of(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

[[noreturn]] void throw_write_error(const std::string& path, const char* op, int err) {
  throw Error(make_message("cannot write ", path, ": ", op, " failed: ", std::strerror(err),
                           err == ENOSPC || err == EFBIG || err == EDQUOT ? "; free some space and run again" : ""));
}

// NotFoundError when the directory that should hold `path` is missing, else the system's error.
[[noreturn]] void throw_create_error(const std::string& path, int err) {
  std::error_code ec;
  const std::string dir = parent_of(path);
  if (err == ENOENT && !fs::is_directory(dir, ec))
    throw NotFoundError(make_message("cannot write ", path, ": directory ", dir, " does not exist; create it first"));
  throw_write_error(path, "creating a file", err);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(temporary_name(path_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_create_error(path_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
  LS_CHECK(fd_ >= 0, RuntimeError, "AtomicFile for ", path_, " written after commit()");
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_write_error(path_, "write", errno);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  LS_CHECK(fd_ >= 0, RuntimeError, "AtomicFile for ", path_, " committed twice");
  if (::fsync(fd_) != 0) throw_write_error(path_, "fsync", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw_write_error(path_, "close", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) throw_write_error(path_, "rename", errno);
  committed_ = true;
  sync_directory(parent_of(path_));
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents);
  file.commit();
}

void make_parent_directories(const std::string& path) {
  const std::string dir = parent_of(path);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec) {
    // The deepest ancestor that exists: what stopped the creation is in it.
    fs::path existing = fs::path(dir).parent_path();
    while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
    throw Error(make_message("cannot create directory ", dir, " for ", path, ": ", ec.message(),
                             existing.empty() ? "" : " (in " + existing.string() + ")",
                             "; choose a path in a writable directory"));
  }
}

void make_parent_directories_if_possible(const std::string& path) {
  try {
    make_parent_directories(path);
  } catch (const Error& e) {
    log(LogLevel::warning, e.what());
  }
}

std::string trim(const std::string& text, const char* blanks) {
  const size_t begin = text.find_first_not_of(blanks), end = text.find_last_not_of(blanks);
  return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw NotFoundError(make_message("cannot open ", path, ": ", std::strerror(errno), "; check the path"));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw NotFoundError(make_message("cannot open ", path, ": not a regular file; check the path"));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw DataLossError(make_message("cannot read ", path, ": ", std::strerror(err)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);  // a file that shrank while being read: its parser finds it truncated
  return bytes;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_write_error(dir, "opening the directory to fsync it", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw_write_error(dir, "fsync of the directory", err);
}

namespace {
// Throws unless a file can be created beside `path` (in the directory that would hold it).
void probe_directory_of(const std::string& path, const std::string& what) {
  std::error_code ec;
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    const std::string dir = parent_of(path);
    LS_CHECK(err != ENOENT || fs::is_directory(dir, ec), NotFoundError, "cannot write ", what, " ", path,
             ": directory ", dir, " does not exist; create it first");
    throw Error(make_message("cannot write ", what, " ", path, ": ", std::strerror(err)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}
}  // namespace

void check_writable(const std::string& path, const std::string& what) {
  std::error_code ec;
  LS_CHECK(!path.empty(), ValueError, what, " is empty; give a file path");
  LS_CHECK(!fs::is_directory(path, ec), ValueError, what, " ", path, " is a directory; give a file path");
  probe_directory_of(path, what);
}

void check_directory_writable(const std::string& dir, const std::string& what) {
  std::error_code ec;
  LS_CHECK(!dir.empty(), ValueError, what, " is empty; give a directory path");
  LS_CHECK(!fs::exists(dir, ec) || fs::is_directory(dir, ec), ValueError, what, " ", dir,
           " exists and is not a directory; give a directory path");
  fs::create_directories(dir, ec);
  LS_CHECK(!ec, Error, "cannot create ", what, " ", dir, ": ", ec.message());
  probe_directory_of((fs::path(dir) / "probe").string(), what);
}

void AtomicDirectory::check(const std::string& dir_in, const std::string& marker) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  LS_CHECK(!dir.empty(), ValueError, "the directory name is empty; give a directory path");
  if (fs::exists(dir, ec)) {
    LS_CHECK(fs::is_directory(dir, ec), ValueError, dir, " exists and is not a directory; choose another path");
    LS_CHECK(fs::is_empty(dir, ec) || fs::exists(fs::path(dir) / marker, ec), ValueError, "directory ", dir,
             " exists and holds other files (no ", marker, "); choose a new or empty directory");
  }
  probe_directory_of(dir, "directory");
}

AtomicDirectory::AtomicDirectory(std::string dir, const std::string& marker) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  check(dir_, marker);
  staging_ = temporary_name(dir_);
  if (::mkdir(staging_.c_str(), 0755) != 0) throw_write_error(dir_, "creating a temporary directory", errno);
}

AtomicDirectory::~AtomicDirectory() {
  std::error_code ec;
  if (!committed_) fs::remove_all(staging_, ec);
}

void AtomicDirectory::commit() {
  LS_CHECK(!committed_, RuntimeError, "directory ", dir_, " committed twice");
  sync_directory(staging_);
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    // Exchanged in one step, so readers never find the directory missing; the old one is then at staging_.
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0)
      throw_write_error(dir_, "exchanging the new directory with the old one", errno);
    fs::remove_all(staging_, ec);
  } else if (::rename(staging_.c_str(), dir_.c_str()) != 0) {
    throw_write_error(dir_, "renaming the new directory into place", errno);
  }
  committed_ = true;
  sync_directory(parent_of(dir_));
}

namespace {
struct PendingWrites {
  std::mutex mutex;
  std::condition_variable done;
  int count = 0;
};
// Never destroyed: writer threads may still end while the process exits.
PendingWrites& pending_writes() {
  static auto* p = new PendingWrites;
  return *p;
}
}  // namespace

PendingWrite::PendingWrite() {
  std::lock_guard lock(pending_writes().mutex);
  ++pending_writes().count;
}

PendingWrite::~PendingWrite() {
  PendingWrites& p = pending_writes();
  std::lock_guard lock(p.mutex);
  if (--p.count == 0) p.done.notify_all();
}

bool wait_for_pending_writes(std::chrono::milliseconds timeout) {
  PendingWrites& p = pending_writes();
  std::unique_lock lock(p.mutex);
  return p.done.wait_for(lock, timeout, [&] { return p.count == 0; });
}

}  // namespace lockstep
