// Shape: the extents of a row-major tensor, with NumPy broadcasting and axis normalisation.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace lockstep {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  // Number of elements; 1 for a scalar (rank 0).
  int64_t numel() const;
  // Dimension `axis`; negative axes count from the end, as in NumPy.
  int64_t operator[](int64_t axis) const { return dims_[static_cast<size_t>(normalize_axis(axis))]; }
  int64_t& operator[](int64_t axis) { return dims_[static_cast<size_t>(normalize_axis(axis))]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Maps a possibly negative axis into [0, rank); throws ValueError when out of range.
  int64_t normalize_axis(int64_t axis) const;
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // "(64, 28, 28, 1)", as TensorFlow prints shapes.
  std::string str() const;

  bool operator==(const Shape&) const = default;

 private:
  std::vector<int64_t> dims_;
};

// The NumPy broadcast of two shapes; throws ValueError naming both when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace lockstep
