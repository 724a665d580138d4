// Shared by the TFRecord, Example and CSV tests: a temporary directory, the golden files of
// tests/golden/make_tfrecord_golden.py and their expected.json, and byte helpers.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/data/dataset.h"
#include "../error_of.h"

namespace lockstep::data::testing {

namespace fs = std::filesystem;

// A temporary directory, removed with its contents at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("lockstep_tfrecord_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::string golden_dir() {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/tests/golden/tfrecord";
}
inline std::string golden(const std::string& name) {
  return golden_dir() + "/" + name;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline const nlohmann::json& expected() {
  static const nlohmann::json j = nlohmann::json::parse(read_bytes(golden("expected.json")));
  return j;
}

inline std::string base64_decode(const std::string& in) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    acc = acc << 6 | static_cast<uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Every record of a dataset of records (string scalars).
inline std::vector<std::string> records_of(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds) out.push_back(e.string().item());
  return out;
}

using lockstep::testing::error_of;

}  // namespace lockstep::data::testing
