// Atomic files and directories: whole or not at all, every failure one error naming the file, no temporary
// file left behind. A full disk is simulated with RLIMIT_FSIZE (writes past it fail with EFBIG).
#include "lockstep/core/files.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "lockstep/core/error.h"
#include "../error_of.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_files_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

// While alive, files this process writes may not grow past `bytes` (as on a nearly full disk).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

TEST_F(Files, WriteReplacesTheFileWholeAndLeavesNoTemporary) {
  write_file_atomically(path("m.json"), "old");
  write_file_atomically(path("m.json"), "new contents");
  EXPECT_EQ(read(path("m.json")), "new contents");
  EXPECT_EQ(names(), std::vector<std::string>{"m.json"});
}

TEST_F(Files, FullDiskIsOneErrorAndKeepsTheOldFile) {
  write_file_atomically(path("m.json"), "old");
  try {
    FileSizeLimit limit(1000);
    write_file_atomically(path("m.json"), std::string(5000, 'x'));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot write " + path("m.json")), std::string::npos) << what;
    EXPECT_NE(what.find("File too large"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_EQ(read(path("m.json")), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"m.json"});
}

TEST_F(Files, MissingDirectoryIsNotFoundNamingIt) {
  EXPECT_THROW(write_file_atomically(path("no/such/m.json"), "x"), NotFoundError);
  EXPECT_THROW(check_writable(path("no/such/m.json"), "metrics file"), NotFoundError);
  EXPECT_THROW(check_writable(dir_.string(), "metrics file"), ValueError);  // a directory, not a file
  EXPECT_NO_THROW(check_writable(path("m.json"), "metrics file"));
  EXPECT_TRUE(names().empty());  // the probe is gone
}

TEST_F(Files, DirectoryAppearsWholeOrNotAtAll) {
  {
    AtomicDirectory d(path("model"), "config.json");
    write_file_atomically(d.staging() + "/config.json", "{}");
    // Not committed: as if the weights failed to write.
  }
  EXPECT_EQ(names(), std::vector<std::string>{});
  {
    AtomicDirectory d(path("model"), "config.json");
    write_file_atomically(d.staging() + "/config.json", "1");
    d.commit();
  }
  {
    AtomicDirectory d(path("model"), "config.json");  // replaces the old model in one exchange
    write_file_atomically(d.staging() + "/config.json", "2");
    write_file_atomically(d.staging() + "/weights", "w");
    d.commit();
  }
  EXPECT_EQ(names(), std::vector<std::string>{"model"});
  EXPECT_EQ(read(path("model/config.json")), "2");
  EXPECT_TRUE(fs::exists(path("model/weights")));
}

TEST_F(Files, DirectoryRefusesToReplaceUnrelatedFiles) {
  fs::create_directories(path("home"));
  write_file_atomically(path("home/notes.txt"), "precious");
  EXPECT_THROW(AtomicDirectory(path("home"), "config.json"), ValueError);
  EXPECT_EQ(read(path("home/notes.txt")), "precious");
  write_file_atomically(path("file"), "x");
  EXPECT_THROW(AtomicDirectory::check(path("file"), "config.json"), ValueError);
}

TEST_F(Files, ReadFileGivesEveryByteOrNamesTheFile) {
  const std::string bytes("a\0b\xff", 4);
  write_file_atomically(path("f"), bytes);
  EXPECT_EQ(read_file(path("f")), bytes);
  write_file_atomically(path("empty"), "");
  EXPECT_EQ(read_file(path("empty")), "");
  EXPECT_NE(testing::error_of<NotFoundError>([&] { read_file(path("missing")); }).find(path("missing")), std::string::npos);
  EXPECT_NE(testing::error_of<NotFoundError>([&] { read_file(dir_.string()); }).find("not a regular file"), std::string::npos);
}

TEST_F(Files, ParentDirectoriesAreCreatedOrTheOneInTheWayIsNamed) {
  make_parent_directories(path("a/b/c/file"));
  EXPECT_TRUE(fs::is_directory(path("a/b/c")));
  make_parent_directories(path("a/b/c/file"));  // already there: nothing to do
  make_parent_directories("relative_file_in_the_working_directory");
  write_file_atomically(path("plain"), "x");
  const std::string message = testing::error_of<Error>([&] { make_parent_directories(path("plain/sub/file")); });
  EXPECT_NE(message.find("cannot create directory " + path("plain/sub")), std::string::npos) << message;
}

}  // namespace
}  // namespace lockstep
