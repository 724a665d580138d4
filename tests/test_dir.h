// TestDir: a fresh directory under the system temp directory, removed with everything in it when the test ends,
// also when an assertion stops the test early. Test helper only.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace lockstep::testing {

struct TestDir {
  std::filesystem::path path;
  explicit TestDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  std::string str() const { return path.string(); }
  // The names of the entries directly in it.
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.insert(e.path().filename().string());
    return out;
  }
};

}  // namespace lockstep::testing
