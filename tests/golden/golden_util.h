// Shared by the golden tests: the integer-hash formula that generates weights, images and labels identically
// in the Python scripts and here, the JSON loader, and comparisons that name the failing element.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/core/shape.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::golden {

using nlohmann::json;

constexpr int64_t kBatch = 64;
constexpr int64_t kClasses = 10;
// The tutorial model's weights, in the order of Sequential::variables() and of the JSON files.
inline const std::vector<std::string> kWeightNames = {"conv_kernel", "conv_bias", "dense1_kernel",
                                                      "dense1_bias", "dense2_kernel", "dense2_bias"};

// The input formula, identical to make_tutorial_golden.py. Element i (row-major, lockstep layout) of the
// tensor with salt s:
//   h = (i * 2654435761 + s * 40503 + 12345) mod 2^32      (uint32 arithmetic)
//   u = (h >> 8) / 2^24                                      (exact in float32)
//   weight = float32((u - 0.5) * scale)                      (product in double, rounded to float32 once)
//   image  = float32(u)                                      (in [0, 1))
//   label  = h % 10
inline uint32_t formula_hash(uint64_t i, uint64_t salt) {
  return static_cast<uint32_t>(i * 2654435761ull + salt * 40503ull + 12345ull);
}

inline double formula_uniform(uint64_t i, uint64_t salt) {
  return static_cast<double>(formula_hash(i, salt) >> 8) / 16777216.0;
}

// scale_or_null null gives images (u itself).
inline std::vector<float> formula_tensor(int64_t numel, uint64_t salt, const json& scale_or_null) {
  std::vector<float> out(static_cast<size_t>(numel));
  for (size_t i = 0; i < out.size(); ++i) {
    const double u = formula_uniform(i, salt);
    out[i] = static_cast<float>(scale_or_null.is_null() ? u : (u - 0.5) * scale_or_null.get<double>());
  }
  return out;
}

inline std::vector<int64_t> formula_labels(int64_t n, uint64_t salt) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(formula_hash(static_cast<uint64_t>(i), salt) % kClasses);
  return out;
}

// tests/golden/<file>, found through LOCKSTEP_SOURCE_DIR (set by ctest).
inline json load_golden(const std::string& file) {
  const char* root = std::getenv("LOCKSTEP_SOURCE_DIR");
  if (root == nullptr) root = LOCKSTEP_SOURCE_DIR;
  const std::string path = std::string(root) + "/tests/golden/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + "; regenerate it with its script in tests/golden");
  return json::parse(in);
}

inline Shape shape_of(const json& dims) { return Shape(dims.get<std::vector<int64_t>>()); }

// A tensor the Python scripts wrote as {"shape", "dtype", "values"}: int32/int64 as such, floats as float32.
inline Tensor tensor_from_json(const json& t) {
  const Shape shape = shape_of(t["shape"]);
  const std::string dtype = t["dtype"];
  if (dtype == "int32" || dtype == "int64")
    return raw_ops::cast(from_vector(t["values"].get<std::vector<int64_t>>(), shape), dtype_from_name(dtype));
  return raw_ops::cast(from_vector(t["values"].get<std::vector<double>>(), shape), DType::float32);
}

// "[i, j, k, l]" for flat index `flat` of `shape`, so a mismatch names the element in the lockstep layout.
inline std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream s;
  s << "[";
  for (size_t d = 0; d < idx.size(); ++d) s << (d ? ", " : "") << idx[d];
  s << "]";
  return s.str();
}

// Expects |actual[indices[k]] - expected[k]| <= tolerance * max_k |expected[k]|, reporting the first
// mismatches and the worst one with their multi-indices.
inline void expect_values_near(const std::string& name, const Shape& shape, const std::vector<float>& actual,
                               const std::vector<int64_t>& indices, const std::vector<double>& expected,
                               double relative_tolerance) {
  constexpr int kMaxReported = 10;
  ASSERT_EQ(indices.size(), expected.size()) << name;
  double scale = 0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  const double tolerance = relative_tolerance * scale;
  int mismatches = 0;
  size_t worst = 0;
  double worst_error = -1;
  for (size_t k = 0; k < expected.size(); ++k) {
    const double error = std::abs(static_cast<double>(actual[static_cast<size_t>(indices[k])]) - expected[k]);
    if (error > worst_error) worst_error = error, worst = k;
    if (error > tolerance && ++mismatches <= kMaxReported) {
      ADD_FAILURE() << name << index_str(indices[k], shape) << ": expected " << expected[k] << ", actual "
                    << actual[static_cast<size_t>(indices[k])] << ", |diff| " << error << " > tolerance " << tolerance;
    }
  }
  EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << expected.size()
                           << " compared values out of tolerance " << tolerance << " (" << relative_tolerance
                           << " * max |expected| " << scale << "); worst " << index_str(indices[worst], shape)
                           << " expected " << expected[worst] << " actual " << actual[static_cast<size_t>(indices[worst])];
}

inline void expect_relative(const std::string& what, double actual, double expected, double magnitude,
                            double relative_tolerance) {
  EXPECT_LE(std::abs(actual - expected), relative_tolerance * magnitude)
      << what << ": expected " << expected << ", actual " << actual << " (tolerance " << relative_tolerance << " * "
      << magnitude << ")";
}

// Compares a tensor stored either in full ("values") or, when too large, as samples at formula indices plus
// a projection on a formula tensor; `prefix` selects e.g. the "delta_" statistics.
inline void expect_tensor_matches(const std::string& name, const std::vector<float>& actual, const json& e,
                                  double relative_tolerance) {
  const Shape shape = shape_of(e["shape"]);
  ASSERT_EQ(static_cast<int64_t>(actual.size()), shape.numel()) << name;
  if (e.contains("values")) {
    std::vector<int64_t> all(actual.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    expect_values_near(name, shape, actual, all, e["values"].get<std::vector<double>>(), relative_tolerance);
    return;
  }
  const auto indices = e["sample_indices"].get<std::vector<int64_t>>();
  const uint64_t sample_salt = e["sample_salt"].get<uint64_t>();
  for (size_t k = 0; k < indices.size(); ++k)
    ASSERT_EQ(indices[k], static_cast<int64_t>(formula_hash(k, sample_salt) % actual.size())) << name << " sample " << k;
  expect_values_near(name, shape, actual, indices, e["sample_values"].get<std::vector<double>>(), relative_tolerance);
  const std::vector<float> projection =
      formula_tensor(static_cast<int64_t>(actual.size()), e["projection_salt"].get<uint64_t>(), 1.0);
  double dot = 0;
  for (size_t i = 0; i < actual.size(); ++i) dot += static_cast<double>(actual[i]) * projection[i];
  expect_relative(name + " projection", dot, e["projection"].get<double>(), e["projection_abs"].get<double>(),
                  relative_tolerance);
}

}  // namespace lockstep::golden
