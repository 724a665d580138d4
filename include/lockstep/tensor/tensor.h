// Tensor: a typed, shaped, strided view of shared storage from the caching allocator. Row-major;
// reshape and slice of contiguous data are views; ops take any strides and return contiguous tensors.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
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
  bool is_gpu() const { return type == DeviceType::cuda; }
  std::string str() const;  // "/cpu:0" or "/gpu:0", as TensorFlow names devices
  static Device gpu(int index = 0) { return {DeviceType::cuda, index}; }
  // TensorFlow's spellings: "/cpu:0", "/gpu:1", "/device:GPU:1", "GPU:0", "gpu" (index 0), any case. Throws
  // InvalidArgumentError naming the accepted forms; a GPU this process does not have is refused by gpu_available.
  static Device parse(const std::string& name);
};

// GPUs this process can use (0 in a build without CUDA, or without a driver or device).
int gpu_count();
// "NVIDIA H200, compute capability 9.0, 132 SMs, 140 GiB" for a GPU this process has, for headers and metrics.
std::string gpu_summary(Device device);
// Throws FailedPreconditionError naming `device` and why it cannot be used (no CUDA in this build, no driver, an
// index past the GPUs present) unless it is the CPU or a GPU that exists.
void check_device_available(Device device);

// The device new variables are placed on: the innermost DeviceScope of this thread (TF's `with tf.device(...)`;
// strategies open one for each replica), else the process's default, which is the CPU unless the environment
// variable LOCKSTEP_DEVICE ("/gpu:0", "gpu", ...) or set_default_device says otherwise. Ops run where their inputs
// are; an op with inputs on the host and on a GPU copies the host ones to the GPU.
Device default_device();
void set_default_device(Device device);
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::optional<Device> previous_;
};

// A block of device memory, 64-byte aligned, returned to the caching allocator when the last tensor
// using it goes away; or host memory someone else allocated, kept alive by `owner` as long as the storage.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  Storage(void* data, size_t bytes, std::shared_ptr<const void> owner);
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
  std::shared_ptr<const void> owner_;  // set for memory this storage does not allocate
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

  // Pointer to the first element (at offset) for host code; checks that T matches dtype() and that the tensor is
  // in host memory (a GPU tensor throws, naming .cpu() as the fix).
  template <typename T> T* data() const {
    LS_CHECK(dtype_of<T>() == dtype(), InvalidArgumentError, "tensor holds ", dtype_name(dtype()),
             ", accessed as ", dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;
  // The first element's address on the tensor's own device, for kernels of that device.
  void* device_data() const;

  // This tensor on `device`: itself when already there, else a contiguous copy.
  Tensor to(Device device) const;
  Tensor cpu() const { return to(Device{}); }

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

// Statistics of the host memory's caching allocator, for tests and benchmarks.
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
  if (device().is_gpu()) return cpu().to_vector<T>();
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
