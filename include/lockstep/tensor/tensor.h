// Tensor: a typed, shaped, strided view of shared storage from the caching allocator. Row-major;
// reshape and slice of contiguous data are views; ops take any strides and return contiguous tensors.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "lockstep/core/dtype.h"
#include "lockstep/core/error.h"
#include "lockstep/core/shape.h"

namespace lockstep {

enum class DeviceType : uint8_t { cpu, cuda };
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const;  // "/cpu:0", as TensorFlow names devices
};

// A block of device memory, 64-byte aligned, returned to the caching allocator when the last tensor
// using it goes away.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
};

class Tensor {
 public:
  // An undefined tensor (defined() is false); used for "no gradient" and optional arguments.
  Tensor() = default;
  // A new contiguous tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, Device device = {});
  // A view of `storage` (no copy); strides and offset in elements.
  Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, int64_t offset, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  int64_t rank() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  int64_t dim(int64_t axis) const { return shape()[axis]; }
  const std::vector<int64_t>& strides() const { return impl().strides; }
  int64_t offset() const { return impl().offset; }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  bool is_contiguous() const;
  // Identity of this tensor value for gradient tapes: copies of a Tensor share it, views and op results
  // get a new one.
  int64_t id() const { return impl().id; }

  // Pointer to the first element (at offset); checks that T matches dtype().
  template <typename T> T* data() const {
    LS_CHECK(dtype_of<T>() == dtype(), InvalidArgumentError, "tensor holds ", dtype_name(dtype()),
             ", accessed as ", dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;

  // This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;
  // A contiguous deep copy.
  Tensor clone() const;
  // Copies src's values into this tensor's storage in place (same shape and dtype).
  void copy_from(const Tensor& src) const;

  // The single value of a one-element tensor, converted to T.
  template <typename T> T item() const;
  // All values in row-major order, converted to T.
  template <typename T> std::vector<T> to_vector() const;
  // TensorFlow's repr: tf.Tensor([1. 2.], shape=(2,), dtype=float32), long tensors abbreviated.
  std::string str() const;

 private:
  struct Impl {
    std::shared_ptr<Storage> storage;
    Shape shape;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    DType dtype = DType::float32;
    int64_t id = 0;
  };
  const Impl& impl() const {
    LS_CHECK(impl_ != nullptr, InvalidArgumentError, "use of an undefined (empty) Tensor");
    return *impl_;
  }
  std::shared_ptr<const Impl> impl_;
};

// Calls f(i, offset) for every element in row-major order of `shape`, where offset is the element offset
// under `strides`. The building block of strided loops.
template <typename F> void for_each_offset(const Shape& shape, const std::vector<int64_t>& strides, F&& f);

// Statistics of the caching allocator, for tests and benchmarks.
struct AllocatorStats {
  int64_t allocations = 0;  // requests served
  int64_t cache_hits = 0;   // requests served from the cache, without malloc
  int64_t bytes_in_use = 0;
  int64_t bytes_cached = 0;
};
AllocatorStats allocator_stats();
// Returns all cached blocks to the system.
void allocator_release_cached();

}  // namespace lockstep

template <typename F>
void lockstep::for_each_offset(const Shape& shape, const std::vector<int64_t>& strides, F&& f) {
  const int64_t n = shape.numel(), r = shape.rank();
  if (n == 0) return;
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int64_t d = r - 1; d >= 0; --d) {
      size_t k = static_cast<size_t>(d);
      if (++idx[k] < shape.dims()[k]) {
        off += strides[k];
        break;
      }
      off -= strides[k] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
}

template <typename T> T lockstep::Tensor::item() const {
  LS_CHECK(numel() == 1, InvalidArgumentError, "item() needs a tensor with one element, got shape ",
           shape().str());
  return to_vector<T>()[0];
}

template <typename T> std::vector<T> lockstep::Tensor::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&](auto v) {
    using S = decltype(v);
    const S* p = static_cast<const S*>(raw_data());
    for_each_offset(shape(), strides(), [&](int64_t i, int64_t off) {
      if constexpr (std::is_same_v<S, bfloat16> || std::is_same_v<T, bfloat16>)
        out[static_cast<size_t>(i)] = T(static_cast<float>(p[off]));
      else
        out[static_cast<size_t>(i)] = static_cast<T>(p[off]);
    });
  });
  return out;
}
