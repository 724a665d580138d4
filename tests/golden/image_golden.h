// Shared by tests/data/images_test.cc and tests/keras/image_dataset_test.cc: where the committed image tree and
// TensorFlow's values for it are (made by make_image_golden.py), and the message of an expected error.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include "../error_of.h"

namespace lockstep::image_golden {

inline std::string source_dir() {
  const char* root = std::getenv("LOCKSTEP_SOURCE_DIR");
  return root ? root : LOCKSTEP_SOURCE_DIR;
}

// tests/golden/image_data: three class folders of PNG and JPEG files, plus files Keras skips.
inline std::string image_root() {
  return source_dir() + "/tests/golden/image_data";
}

// tests/golden/image_golden.json, parsed once.
inline const nlohmann::json& golden() {
  static const nlohmann::json g = [] {
    std::ifstream in(source_dir() + "/tests/golden/image_golden.json");
    if (!in)
      throw std::runtime_error("tests/golden/image_golden.json is missing: run tests/golden/make_image_golden.py");
    return nlohmann::json::parse(in);
  }();
  return g;
}

using lockstep::testing::error_of;

}  // namespace lockstep::image_golden
