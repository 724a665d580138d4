// Helpers for tests that run the lockstep binary: running a command with a deadline, temporary
// directories, and small IDX data sets written on the spot.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lockstep::testing {

struct Result {
  int code;
  std::string out, err;
};

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `lockstep <args>` with a deadline (so a hang fails instead of blocking), capturing both streams.
inline Result run_lockstep(const std::string& args, const std::string& env = "", int timeout_s = 300) {
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  if (!bin) bin = LOCKSTEP_BIN_DIR;
  const std::string dir = std::filesystem::temp_directory_path() / ("lockstep_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cmd = env + " timeout -k 5 " + std::to_string(timeout_s) + " " + bin + "/lockstep " + args + " >" +
                          dir + "/out 2>" + dir + "/err";
  const int status = std::system(cmd.c_str());
  Result result{WEXITSTATUS(status), read_all(dir + "/out"), read_all(dir + "/err")};
  std::filesystem::remove_all(dir);
  return result;
}

// The lines of `text` that start with `prefix`, without it.
inline std::vector<std::string> lines_after(const std::string& text, const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) lines.push_back(line.substr(prefix.size()));
  return lines;
}

inline size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A fresh empty directory under the system temp directory.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("lockstep_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void put_be32(std::ofstream& out, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

// Writes train/t10k IDX files (uncompressed) with `n_train`/`n_test` images of side x side pixels whose
// label is readable from the picture (a bright row at 2 * label), so a model can learn it quickly.
inline void write_idx_dataset(const std::filesystem::path& dir, int n_train, int n_test, int side = 28) {
  auto write = [&](const std::string& prefix, int n) {
    std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
    std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
    put_be32(images, 0x803);
    put_be32(images, static_cast<uint32_t>(n));
    put_be32(images, static_cast<uint32_t>(side));
    put_be32(images, static_cast<uint32_t>(side));
    put_be32(labels, 0x801);
    put_be32(labels, static_cast<uint32_t>(n));
    for (int i = 0; i < n; ++i) {
      const int label = (i * 7 + 3) % 10;
      std::vector<char> pixels(static_cast<size_t>(side * side), 0);
      for (int x = 0; x < side; ++x) pixels[static_cast<size_t>((2 * label) * side + x)] = static_cast<char>(200);
      images.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
      labels.put(static_cast<char>(label));
    }
  };
  write("train", n_train);
  write("t10k", n_test);
}

}  // namespace lockstep::testing
