// Tensor construction, views, copies and printing.
#include "lockstep/tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/kernels/cuda/runtime.h"

namespace lockstep {

namespace {
std::atomic<int64_t> g_next_id{1};

thread_local std::optional<Device> t_scope_device;

// LOCKSTEP_DEVICE, read once; checked when first used, so a bad value stops the program with its reason.
Device& process_default_device() {
  static Device d = [] {
    const char* env = std::getenv("LOCKSTEP_DEVICE");
    return env && *env ? Device::parse(env) : Device{};
  }();
  return d;
}

// dst[i] = src[i] for two tensors of one shape, dtype and device, any strides.
void copy_strided(const Tensor& src, const Tensor& dst) {
  size_t esize = dtype_size(src.dtype());
  if (src.device().is_gpu()) {
#if LOCKSTEP_WITH_CUDA
    if (src.numel() == 0) return;
    kernels::cuda::set_device(src.device().index);
    kernels::cuda::copy_strided(esize, src.shape().dims(), src.strides(), src.device_data(), dst.strides(),
                                dst.device_data());
#endif
    return;
  }
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.raw_data(), src.raw_data(), static_cast<size_t>(src.numel()) * esize);
    return;
  }
  auto* s = static_cast<const char*>(src.raw_data());
  auto* d = static_cast<char*>(dst.raw_data());
  if (dst.is_contiguous()) {
    for_each_offset(src.shape(), src.strides(), [&](int64_t i, int64_t off) {
      std::memcpy(d + i * static_cast<int64_t>(esize), s + off * static_cast<int64_t>(esize), esize);
    });
    return;
  }
  std::vector<int64_t> dst_offsets(static_cast<size_t>(dst.numel()));
  for_each_offset(dst.shape(), dst.strides(), [&](int64_t i, int64_t off) { dst_offsets[static_cast<size_t>(i)] = off; });
  for_each_offset(src.shape(), src.strides(), [&](int64_t i, int64_t off) {
    std::memcpy(d + dst_offsets[static_cast<size_t>(i)] * static_cast<int64_t>(esize),
                s + off * static_cast<int64_t>(esize), esize);
  });
}
}  // namespace

std::string Device::str() const { return make_message("/", type == DeviceType::cpu ? "cpu" : "gpu", ":", index); }

Device Device::parse(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.starts_with("/device:")) s = s.substr(8);
  else if (s.starts_with("/")) s = s.substr(1);
  Device d;
  std::string kind = s.substr(0, s.find(':'));
  if (kind == "gpu") d.type = DeviceType::cuda;
  else if (kind != "cpu") kind.clear();
  const std::string index = s.find(':') == std::string::npos ? "0" : s.substr(s.find(':') + 1);
  const bool digits = !index.empty() && index.size() < 6 &&
                      std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c); });
  LS_CHECK(!kind.empty() && digits, InvalidArgumentError, "device '", name,
           "' is not one lockstep knows: use /cpu:0, /gpu:N or /device:GPU:N (also cpu, gpu, GPU:N)");
  d.index = std::stoi(index);
  return d;
}

int gpu_count() {
#if LOCKSTEP_WITH_CUDA
  return kernels::cuda::device_count();
#else
  return 0;
#endif
}

std::string gpu_summary(Device device) {
  check_device_available(device);
#if LOCKSTEP_WITH_CUDA
  if (device.is_gpu()) return kernels::cuda::device_summary(device.index);
#endif
  return "";
}

void check_device_available(Device device) {
  if (!device.is_gpu()) return;
#if LOCKSTEP_WITH_CUDA
  const std::string why = kernels::cuda::unavailable_reason();
#else
  const std::string why = "this build of lockstep has no CUDA (rebuild with nvcc installed, or -DLOCKSTEP_CUDA=ON)";
#endif
  LS_CHECK(gpu_count() > 0, FailedPreconditionError, "device ", device.str(), " is not available: ", why,
           "; run on /cpu:0 instead");
  LS_CHECK(device.index < gpu_count(), FailedPreconditionError, "device ", device.str(),
           " is not available: this process sees ", gpu_count(), " GPU(s), /gpu:0 to /gpu:", gpu_count() - 1);
}

Device default_device() {
  if (t_scope_device) return *t_scope_device;
  const Device d = process_default_device();
  check_device_available(d);
  return d;
}

void set_default_device(Device device) {
  check_device_available(device);
  process_default_device() = device;
}

DeviceScope::DeviceScope(Device device) : previous_(t_scope_device) {
  check_device_available(device);
  t_scope_device = device;
}

DeviceScope::~DeviceScope() { t_scope_device = previous_; }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape.dims())
    LS_CHECK(d >= 0, InvalidArgumentError, "negative dimension in shape ", shape.str());
  auto storage = std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device);
  return Tensor(std::move(storage), shape, shape.strides(), 0, dtype);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, int64_t offset,
               DType dtype) {
  LS_CHECK(static_cast<int64_t>(strides.size()) == shape.rank(), InvalidArgumentError, "tensor of shape ",
           shape.str(), " needs ", shape.rank(), " strides, got ", strides.size());
  auto impl = std::make_shared<Impl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->id = g_next_id++;
  impl_ = std::move(impl);
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t i = rank() - 1; i >= 0; --i) {
    int64_t d = shape().dims()[static_cast<size_t>(i)];
    if (d != 1 && strides()[static_cast<size_t>(i)] != expected) return false;
    expected *= d;
  }
  return true;
}

void* Tensor::raw_data() const {
  LS_CHECK(!device().is_gpu(), InvalidArgumentError, "a tensor on ", device().str(),
           " was read by code that runs on the host: copy it with .cpu() first");
  return device_data();
}

void* Tensor::device_data() const {
  return static_cast<char*>(storage()->data()) + offset() * static_cast<int64_t>(dtype_size(dtype()));
}

Tensor Tensor::to(Device target) const {
  if (device() == target) return *this;
  Tensor src = contiguous();
  if (device().is_gpu() && target.is_gpu()) return src.cpu().to(target);  // between GPUs through the host
  Tensor out = empty(shape(), dtype(), target);
#if LOCKSTEP_WITH_CUDA
  const size_t bytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (target.is_gpu())
    kernels::cuda::copy(out.device_data(), src.device_data(), bytes, kernels::cuda::CopyKind::host_to_device,
                        target.index);
  else
    kernels::cuda::copy(out.device_data(), src.device_data(), bytes, kernels::cuda::CopyKind::device_to_host,
                        device().index);
#endif
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  copy_strided(*this, out);
  return out;
}

void Tensor::copy_from(const Tensor& src) const {
  LS_CHECK(src.shape() == shape() && src.dtype() == dtype(), InvalidArgumentError, "cannot copy a ",
           dtype_name(src.dtype()), " tensor of shape ", src.shape().str(), " into a ", dtype_name(dtype()),
           " tensor of shape ", shape().str());
  if (src.storage() == storage() && src.offset() == offset() && src.strides() == strides()) return;
  copy_strided(src.to(device()), *this);
}

std::string Tensor::str() const {
  std::ostringstream os;
  os << "tf.Tensor(";
  std::vector<double> v = to_vector<double>();
  const auto& dims = shape().dims();
  const bool abbreviate = numel() > 1000;
  // Prints the sub-array at `axis` starting at flat index `base`, NumPy style.
  auto print = [&](auto&& self, size_t axis, int64_t base, int64_t step) -> void {
    if (axis == dims.size()) {
      double x = v[static_cast<size_t>(base)];
      if (dtype() == DType::bool_) os << (x != 0 ? "True" : "False");
      else if (is_floating(dtype())) os << x << (x == static_cast<int64_t>(x) ? "." : "");
      else os << static_cast<int64_t>(x);
      return;
    }
    int64_t n = dims[axis], inner = step / std::max<int64_t>(n, 1);
    os << "[";
    for (int64_t i = 0; i < n; ++i) {
      if (abbreviate && n > 6 && i == 3) {
        os << (axis + 1 == dims.size() ? " ..." : "\n ...");
        i = n - 3;
      }
      if (i) os << (axis + 1 == dims.size() ? " " : "\n ");
      self(self, axis + 1, base + i * inner, inner);
    }
    os << "]";
  };
  print(print, 0, 0, numel());
  os << ", shape=" << shape().str() << ", dtype=" << dtype_name(dtype()) << ")";
  return os.str();
}

}  // namespace lockstep
