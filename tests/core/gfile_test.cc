// io::gfile against TensorFlow: every scenario of tests/golden/gfile_golden.json (recorded from tf.io.gfile by
// make_gfile_golden.py) replayed here with the same value or error class and the same files left behind; then
// GFile's reading, writing, seeking and moving, and the error messages, tested directly.
#include "lockstep/core/gfile.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "lockstep/core/error.h"

namespace lockstep::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uid_t kNobody = 65534;

json load_golden() {
  const char* root = std::getenv("LOCKSTEP_SOURCE_DIR");
  if (root == nullptr) root = LOCKSTEP_SOURCE_DIR;
  const std::string path = std::string(root) + "/tests/golden/gfile_golden.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + "; regenerate it with tests/golden/make_gfile_golden.py");
  return json::parse(in);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

// A fresh temporary directory, the working directory while alive (the scenarios use relative paths); removed
// with everything in it, whatever the scenario's permissions, at the end.
class TempDir {
 public:
  TempDir() : previous_(fs::current_path()) {
    std::string name = (fs::temp_directory_path() / "lockstep_gfile_test_XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + name);
    dir_ = name;
    fs::current_path(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::current_path(previous_, ec);
    tree();  // undoes the modes
    fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return dir_; }
  // Every entry, as make_gfile_golden.py records it: "dir/" -> null, "file" -> contents, "link@" -> target.
  json tree() const {
    json out = json::object();
    add_entries(dir_, out);
    return out;
  }

 private:
  void add_entries(const fs::path& dir, json& out) const {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string rel = entry.path().lexically_relative(dir_).string();
      if (entry.is_symlink()) {
        out[rel + "@"] = fs::read_symlink(entry.path()).string();
      } else if (entry.is_directory()) {
        fs::permissions(entry.path(), fs::perms(0755), ec);
        out[rel + "/"] = nullptr;
        add_entries(entry.path(), out);
      } else {
        fs::permissions(entry.path(), fs::perms(0644), ec);
        out[rel] = read_file(entry.path());
      }
    }
  }

  fs::path previous_, dir_;
};

void create_parent(const fs::path& path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
}

void build(const json& setup) {
  for (const json& dir : setup["dirs"]) fs::create_directories(dir.get<std::string>());
  for (const auto& [path, contents] : setup["files"].items()) {
    create_parent(path);
    write_file(path, contents.get<std::string>());
  }
  for (const auto& [path, target] : setup["links"].items()) {
    create_parent(path);
    fs::create_symlink(target.get<std::string>(), path);
  }
  for (const auto& [path, mode] : setup["modes"].items())
    fs::permissions(path, fs::perms(std::stoi(mode.get<std::string>().substr(2), nullptr, 8)));
}

json call_method(gfile::GFile& f, const json& call) {
  const std::string method = call[0];
  if (method == "read") return call.size() > 1 ? f.read(call[1].get<int64_t>()) : f.read();
  if (method == "readline") return f.readline();
  if (method == "readlines") return f.readlines();
  if (method == "tell") return f.tell();
  if (method == "size") return f.size();
  if (method == "write")
    f.write(call[1].get<std::string>());
  else if (method == "seek")
    f.seek(call[1].get<int64_t>(), call.size() > 2 ? call[2].get<int>() : 0);
  else if (method == "flush")
    f.flush();
  else if (method == "close")
    f.close();
  else
    throw std::runtime_error("the golden file asks for GFile." + method + ", which this test does not know");
  return nullptr;
}

json run_op(const std::string& op, const json& a) {
  if (op == "exists") return gfile::exists(a[0]);
  if (op == "isdir") return gfile::isdir(a[0]);
  if (op == "glob") return gfile::glob(a[0]);
  if (op == "listdir") return gfile::listdir(a[0]);
  if (op == "stat") {
    const gfile::FileStatistics s = gfile::stat(a[0]);
    return {{"length", s.is_directory ? json(nullptr) : json(s.length)}, {"is_directory", s.is_directory}};
  }
  if (op == "walk") {
    json out = json::array();
    for (const gfile::WalkEntry& e : gfile::walk(a[0], a[1].get<bool>()))
      out.push_back({e.dirpath, e.dirnames, e.filenames});
    return out;
  }
  if (op == "join") {
    const std::vector<std::string> p = a;
    if (p.size() == 1) return gfile::join(p[0]);
    if (p.size() == 2) return gfile::join(p[0], p[1]);
    if (p.size() == 3) return gfile::join(p[0], p[1], p[2]);
  }
  if (op == "gfile") {
    gfile::GFile f(a[0], a[1]);
    json results = json::array();
    for (const json& call : a[2]) results.push_back(call_method(f, call));
    return results;
  }
  if (op == "makedirs")
    gfile::makedirs(a[0]);
  else if (op == "mkdir")
    gfile::mkdir(a[0]);
  else if (op == "rmtree")
    gfile::rmtree(a[0]);
  else if (op == "remove")
    gfile::remove(a[0]);
  else if (op == "rename")
    gfile::rename(a[0], a[1], a[2].get<bool>());
  else if (op == "copy")
    gfile::copy(a[0], a[1], a[2].get<bool>());
  else
    throw std::runtime_error("the golden file asks for gfile." + op + ", which this test does not know");
  return nullptr;
}

// What TF does, with the fields where lockstep deliberately differs replaced.
json expected_outcome(const json& scenario) {
  json expected = scenario["tensorflow"];
  if (!scenario.contains("lockstep")) return expected;
  const json& differs = scenario["lockstep"];
  if (differs.contains("error") || differs.contains("value")) {
    expected.erase("error");
    expected.erase("value");
  }
  for (const auto& [key, value] : differs.items())
    if (key != "why") expected[key] = value;
  return expected;
}

// Runs the scenario in a fresh directory: "" when lockstep's outcome is the expected one, else what differs.
std::string run_scenario(const json& scenario) {
  const json expected = expected_outcome(scenario);
  json actual;
  std::string message;
  {
    TempDir dir;
    build(scenario["setup"]);
    try {
      actual["value"] = run_op(scenario["op"], scenario["args"]);
    } catch (const Error& e) {
      actual["error"] = error_kind_name(error_kind(e));
      message = e.what();
    }
    actual["after"] = dir.tree();
  }
  std::string out;
  for (const char* key : {"error", "value", "after"}) {
    const json e = expected.value(key, json()), a = actual.value(key, json());
    if (e != a) out += make_message(key, ": expected ", e.dump(), ", lockstep gives ", a.dump(), "\n");
  }
  // A message is one line and names the call with its first argument.
  const std::string named = "(" + scenario["args"][0].get<std::string>();
  if (!message.empty() && (message.find('\n') != std::string::npos || message.find(named) == std::string::npos))
    out += "message does not name \"" + named + "\" on one line: " + message + "\n";
  return out;
}

// Runs the scenario as user nobody when this process is root, so that file permissions apply; exits with the
// result (death-test child).
[[noreturn]] void run_scenario_without_root_and_exit(const json& scenario) {
  if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) {
    std::fprintf(stderr, "cannot become user nobody\n");
    std::_Exit(2);
  }
  const std::string mismatch = run_scenario(scenario);
  std::fprintf(stderr, "%s", mismatch.c_str());
  std::_Exit(mismatch.empty() ? 0 : 1);
}

TEST(GfileGolden, EveryScenarioGivesTensorFlowsOutcome) {
  const json golden = load_golden();
  std::set<std::string> ops;
  int run = 0;
  for (const json& scenario : golden["scenarios"]) {
    ops.insert(scenario["op"].get<std::string>());
    if (scenario["non_root"].get<bool>()) continue;
    SCOPED_TRACE(scenario["name"].get<std::string>());
    EXPECT_EQ(run_scenario(scenario), "");
    ++run;
  }
  EXPECT_GE(run, 100);
  EXPECT_EQ(ops, (std::set<std::string>{"copy", "exists", "gfile", "glob", "isdir", "join", "listdir", "makedirs",
                                        "mkdir", "remove", "rename", "rmtree", "stat", "walk"}));
}

TEST(GfileGolden, PermissionScenariosGiveTensorFlowsOutcome) {
  const json golden = load_golden();
  int run = 0;
  for (const json& scenario : golden["scenarios"]) {
    if (!scenario["non_root"].get<bool>()) continue;
    SCOPED_TRACE(scenario["name"].get<std::string>());
    EXPECT_EXIT(run_scenario_without_root_and_exit(scenario), ::testing::ExitedWithCode(0), "");
    ++run;
  }
  EXPECT_GE(run, 15);
}

class Gfile : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(Gfile, WrittenBytesReadBackInPiecesAndWhole) {
  std::string data;
  for (int i = 0; i < 200000; ++i) data += static_cast<char>(i * 7 % 256);  // past stdio's and read()'s buffers
  {
    gfile::GFile f("b", "wb");
    f.write(data);
    f.close();
  }
  gfile::GFile f("b", "rb");
  EXPECT_EQ(f.size(), 200000);
  EXPECT_EQ(f.read(3), data.substr(0, 3));
  EXPECT_EQ(f.read(100000), data.substr(3, 100000));
  EXPECT_EQ(f.tell(), 100003);
  EXPECT_EQ(f.read(), data.substr(100003));
  EXPECT_EQ(f.read(), "");
  EXPECT_EQ(f.read(10), "");
}

TEST_F(Gfile, ReadlineKeepsNewlinesAndEndsWithEmpty) {
  write_file("t", "a\n\nlong " + std::string(10000, 'x') + "\nlast");
  gfile::GFile f("t");
  EXPECT_EQ(f.readline(), "a\n");
  EXPECT_EQ(f.readline(), "\n");
  EXPECT_EQ(f.readline(), "long " + std::string(10000, 'x') + "\n");
  EXPECT_EQ(f.readline(), "last");
  EXPECT_EQ(f.readline(), "");
  f.seek(0);
  EXPECT_EQ(f.readlines().size(), 4u);
}

TEST_F(Gfile, SeekPastTheEndStopsAtTheEndAndNegativeStaysPut) {
  write_file("t", "0123456789");
  gfile::GFile f("t");
  f.seek(4);
  EXPECT_THROW(f.seek(-5, 1), InvalidArgumentError);
  EXPECT_EQ(f.tell(), 4);
  EXPECT_THROW(f.seek(1, 2), OutOfRangeError);
  EXPECT_EQ(f.tell(), 10);
  EXPECT_EQ(f.read(), "");
  f.seek(-4, 2);
  EXPECT_EQ(f.read(2), "67");
  f.seek(-1, 1);
  EXPECT_EQ(f.read(), "789");
}

TEST_F(Gfile, AppendAddsToTheEndAcrossOpenings) {
  for (const char* part : {"ab", "cd", "ef"}) {
    gfile::GFile f("log", "a");
    f.write(part);
  }
  EXPECT_EQ(read_file("log"), "abcdef");
  gfile::GFile f("log", "ab");
  EXPECT_EQ(f.tell(), 6);
  f.write("g");
  EXPECT_EQ(f.tell(), 7);
  EXPECT_EQ(f.size(), 7);
}

TEST_F(Gfile, FlushMakesWritesVisibleAndTheDestructorCloses) {
  {
    gfile::GFile f("n", "w");
    f.write("abc");
    f.flush();
    EXPECT_EQ(read_file("n"), "abc");
    f.write("def");
  }
  EXPECT_EQ(read_file("n"), "abcdef");
}

TEST_F(Gfile, MovedFileStaysOpenAndTheOldOneIsClosed) {
  write_file("one", "1");
  write_file("two", "2");
  gfile::GFile a("one");
  gfile::GFile b(std::move(a));
  EXPECT_EQ(b.name(), "one");
  EXPECT_EQ(b.read(), "1");
  EXPECT_THROW(a.read(), FailedPreconditionError);  // NOLINT(bugprone-use-after-move): moved-from is closed
  gfile::GFile w("three", "w");
  w.write("3");
  w = gfile::GFile("two");  // closes "three", flushing it
  EXPECT_EQ(read_file("three"), "3");
  EXPECT_EQ(w.read(), "2");
  EXPECT_EQ(w.mode(), "r");
}

TEST_F(Gfile, ClosedFileRefusesEverythingButClose) {
  write_file("t", "x");
  gfile::GFile f("t");
  f.close();
  EXPECT_THROW(f.read(), FailedPreconditionError);
  EXPECT_THROW(f.readline(), FailedPreconditionError);
  EXPECT_THROW(f.tell(), FailedPreconditionError);
  EXPECT_THROW(f.seek(0), FailedPreconditionError);
  EXPECT_THROW(f.flush(), FailedPreconditionError);
  f.close();
  EXPECT_EQ(f.size(), 1);  // the file's size, as TF's size() is
}

TEST_F(Gfile, StatGivesNanosecondsAndLength) {
  write_file("t", "12345");
  struct ::stat st;
  ASSERT_EQ(::stat("t", &st), 0);
  const gfile::FileStatistics s = gfile::stat("t");
  EXPECT_EQ(s.length, 5);
  EXPECT_FALSE(s.is_directory);
  EXPECT_EQ(s.mtime_nsec, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  EXPECT_TRUE(gfile::stat(dir_.path().string()).is_directory);
}

TEST_F(Gfile, CopyKeepsPermissionBitsAndLargeContents) {
  const std::string data(3 << 20, 'q');
  write_file("src", data);
  fs::permissions("src", fs::perms(0640));
  gfile::copy("src", "dst");
  EXPECT_EQ(read_file("dst"), data);
  EXPECT_EQ(fs::status("dst").permissions() & fs::perms::all, fs::perms(0640));
}

TEST_F(Gfile, ListingsAndWalksAreSorted) {
  for (const char* d : {"t/c", "t/a", "t/b"}) fs::create_directories(d);
  for (const char* f : {"t/z", "t/y", "t/a/2", "t/a/1"}) write_file(f, "");
  EXPECT_EQ(gfile::listdir("t"), (std::vector<std::string>{"a", "b", "c", "y", "z"}));
  EXPECT_EQ(gfile::glob("t/*"), (std::vector<std::string>{"t/a", "t/b", "t/c", "t/y", "t/z"}));
  std::vector<std::string> order;
  for (const gfile::WalkEntry& e : gfile::walk("t")) order.push_back(e.dirpath);
  EXPECT_EQ(order, (std::vector<std::string>{"t", "t/a", "t/b", "t/c"}));
  EXPECT_EQ(gfile::walk("t")[1].filenames, (std::vector<std::string>{"1", "2"}));
}

TEST_F(Gfile, LinkLoopsAreNotWalkedOrDeletedThrough) {
  fs::create_directories("t/sub");
  write_file("t/sub/f", "");
  fs::create_directory_symlink("..", "t/sub/up");
  EXPECT_EQ(gfile::walk("t").size(), 2u);
  gfile::rmtree("t");
  EXPECT_FALSE(fs::exists("t"));
}

TEST_F(Gfile, MakedirsThenRmtreeAsTheTutorialsDo) {
  const std::string tmp = gfile::join(dir_.path().string(), "workertemp_1", "model");
  gfile::makedirs(tmp);
  gfile::makedirs(tmp);
  EXPECT_TRUE(gfile::isdir(tmp));
  gfile::GFile(gfile::join(tmp, "ckpt"), "w").write("weights");
  gfile::rmtree(gfile::join(dir_.path().string(), "workertemp_1"));
  EXPECT_FALSE(gfile::exists(tmp));
}

TEST_F(Gfile, RenameAcrossFileSystemsIsUnimplemented) {
  struct ::stat here, shm;
  if (::stat(".", &here) != 0 || ::stat("/dev/shm", &shm) != 0 || here.st_dev == shm.st_dev)
    GTEST_SKIP() << "needs /dev/shm on another file system than " << dir_.path();
  write_file("f", "x");
  const std::string target = "/dev/shm/lockstep_gfile_test_" + std::to_string(::getpid());
  EXPECT_THROW(gfile::rename("f", target), UnimplementedError);
  EXPECT_TRUE(fs::exists("f"));
  EXPECT_FALSE(fs::exists(target));
}

// "<call>: <the system's reason>; <what to do>" on one line.
std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(Gfile, MessagesNameTheCallTheReasonAndWhatToDo) {
  write_file("f", "x");
  EXPECT_EQ(message_of([] { gfile::mkdir("x/y"); }),
            "gfile.mkdir(x/y): No such file or directory; create its parent first, or use gfile.makedirs");
  EXPECT_EQ(message_of([] { gfile::remove("."); }),
            "gfile.remove(.): Is a directory; use gfile.rmtree for a directory");
  EXPECT_EQ(message_of([] { gfile::rename("f", "f"); }),
            "gfile.rename(f, f): f exists; pass overwrite=true to replace it or choose another name");
  EXPECT_EQ(message_of([] { gfile::makedirs("f/g"); }),
            "gfile.makedirs(f/g): f is a file, not a directory; remove it or choose another path");
  EXPECT_EQ(message_of([] { gfile::GFile("nope"); }),
            "gfile.GFile(nope, \"r\"): No such file or directory; check the path and that its directory exists");
  EXPECT_EQ(message_of([] { gfile::GFile("f", "w+"); }),
            "gfile.GFile(f, \"w+\"): read-and-write modes are not supported; open the file once to read and once to "
            "write");
  EXPECT_EQ(message_of([] { gfile::GFile("f").seek(5); }),
            "GFile(f).seek(5, 0): position 5 is past the end of the file (1 bytes); the position is now the end");
}

}  // namespace
}  // namespace lockstep::io
