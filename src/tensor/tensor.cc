// Tensor construction, views, copies and printing.
#include "lockstep/tensor/tensor.h"

#include <atomic>
#include <cstring>
#include <sstream>

namespace lockstep {

namespace {
std::atomic<int64_t> g_next_id{1};

// dst[i] = src[i] for two tensors of one shape and dtype, any strides.
void copy_strided(const Tensor& src, const Tensor& dst) {
  size_t esize = dtype_size(src.dtype());
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
  return static_cast<char*>(storage()->data()) + offset() * static_cast<int64_t>(dtype_size(dtype()));
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
  copy_strided(src, *this);
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
