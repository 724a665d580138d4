// Helpers shared by the data tests: reading datasets of int64 scalars back as numbers, comparing elements
// bitwise, and checking that a restored iterator resumes.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data::testing {

inline Tensor i64(int64_t v) {
  Tensor t = Tensor::empty({}, DType::int64);
  *t.data<int64_t>() = v;
  return t;
}

// Every x value of a dataset (scalars or batches of int64), in order; stops after `limit` elements.
inline std::vector<int64_t> values(const Dataset& ds, size_t limit = 100000) {
  std::vector<int64_t> out;
  size_t n = 0;
  for (const Element& e : ds) {
    for (int64_t v : e.x().to_vector<int64_t>()) out.push_back(v);
    if (++n == limit) break;
  }
  return out;
}

// The x values of each element (batch) separately.
inline std::vector<std::vector<int64_t>> batches(const Dataset& ds) {
  std::vector<std::vector<int64_t>> out;
  for (const Element& e : ds) out.push_back(e.x().to_vector<int64_t>());
  return out;
}

inline bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Same structure and bitwise the same leaves.
inline bool same_element(const Element& a, const Element& b) {
  if (!a.same_structure(b)) return false;
  const std::vector<Element> la = a.flatten(), lb = b.flatten();
  for (size_t i = 0; i < la.size(); ++i) {
    if (la[i].is_tensor() && !same_tensor(la[i].tensor(), lb[i].tensor())) return false;
    if (la[i].is_string() && !(la[i].string() == lb[i].string())) return false;
  }
  return true;
}

// Up to n more elements of `it`.
inline std::vector<Element> drain(Iterator& it, size_t n) {
  std::vector<Element> out;
  while (out.size() < n) {
    std::optional<Element> e = it.next();
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

// Runs make()'s pipeline for `before` elements, saves, runs `after` more; then restores the state (sent
// through its text form) into a fresh iterator of a newly built pipeline and expects the same `after`.
inline void expect_resumes(const std::function<Dataset()>& make, size_t before, size_t after = 40) {
  SCOPED_TRACE(::testing::Message() << "saved after " << before << " elements");
  Iterator original = make().make_iterator();
  ASSERT_EQ(drain(original, before).size(), before);
  std::string saved = original.save_state().dump();
  std::vector<Element> expected = drain(original, after);

  Iterator restored = make().make_iterator(12345);  // another iteration number: the state must override it
  restored.restore_state(nlohmann::json::parse(saved));
  std::vector<Element> actual = drain(restored, after);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(same_element(actual[i], expected[i])) << "element " << i;
  EXPECT_EQ(restored.save_state(), original.save_state());
}

// A [n, 3] float tensor whose row i is (i, i + 0.25, i + 0.5), and labels i % 10 as int64.
inline Tensor rows_tensor(int64_t n) {
  Tensor t = Tensor::empty({n, 3}, DType::float32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 3; ++j) p[i * 3 + j] = static_cast<float>(i) + 0.25f * static_cast<float>(j);
  return t;
}
inline Tensor labels_tensor(int64_t n) {
  Tensor t = Tensor::empty({n}, DType::int64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = i % 10;
  return t;
}

}  // namespace lockstep::data::testing
