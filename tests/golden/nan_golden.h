// Shared by the op harness and nan_golden_test.cc: nan_golden.json's cases (by make_nan_golden.py) read as tensors,
// and a comparison that holds NaN and the infinities to exactly TensorFlow's positions.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "golden_util.h"

namespace lockstep::golden {

// A number as the script writes it: finite values as numbers, the others as "nan", "inf" and "-inf".
inline double special_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::runtime_error("nan_golden.json holds the value \"" + s + "\": regenerate it with make_nan_golden.py");
}

// A case's input: float ones in `float_dtype`, integer ones (labels) as int64.
inline Tensor special_tensor(const json& t, DType float_dtype) {
  const Shape shape = shape_of(t["shape"]);
  if (t["dtype"] == "int64") return from_vector(t["values"].get<std::vector<int64_t>>(), shape);
  std::vector<double> values;
  for (const json& v : t["values"]) values.push_back(special_number(v));
  return raw_ops::cast(from_vector(values, shape), float_dtype);
}

// Expects `actual` to hold NaN, +Inf and -Inf exactly where `expected` does, and the finite values within
// tolerance * max(1, |expected|) of it.
inline void expect_special_values_match(const std::string& name, const Tensor& actual, const Tensor& expected,
                                        double tolerance) {
  ASSERT_EQ(actual.shape(), expected.shape()) << name;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  int mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = std::isnan(e[i]) || std::isinf(e[i])
                          ? (std::isnan(e[i]) ? std::isnan(a[i]) : a[i] == e[i])
                          : std::isfinite(a[i]) && std::abs(a[i] - e[i]) <= tolerance * std::max(1.0, std::abs(e[i]));
    if (!same && ++mismatches <= 10)
      ADD_FAILURE() << name << index_str(static_cast<int64_t>(i), actual.shape()) << ": TensorFlow gives " << e[i]
                    << ", lockstep " << a[i];
  }
  EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << a.size() << " values differ from TensorFlow's";
}

// w[i] = 1 + (i % 3) / 2 in y's shape and dtype: the script's weights of sum(y * w), whose gradients it records.
inline Tensor special_weights(const Tensor& y) {
  std::vector<double> w(static_cast<size_t>(y.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 1 + static_cast<double>(i % 3) / 2;
  return raw_ops::cast(from_vector(w, y.shape()), y.dtype()).to(y.device());
}

}  // namespace lockstep::golden
