// Elementwise ops: broadcasting binary and unary math, where, cast.
#include "lockstep/kernels/cpu/kernels.h"
#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/kernels/cuda/runtime.h"
#include "lockstep/tensor/ops.h"
#include "ops-impl.h"

namespace lockstep {

namespace cpu = kernels::cpu;
namespace cuda = kernels::cuda;

namespace detail {

std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out) {
  std::vector<int64_t> s(static_cast<size_t>(out.rank()), 0);
  const int64_t lead = out.rank() - t.rank();
  for (int64_t d = 0; d < t.rank(); ++d) {
    if (t.shape().dims()[static_cast<size_t>(d)] != 1) s[static_cast<size_t>(d + lead)] = t.strides()[static_cast<size_t>(d)];
  }
  return s;
}

cpu::Iteration broadcast_iteration(const Shape& out, std::initializer_list<const Tensor*> operands) {
  cpu::Iteration it{out.dims(), {}};
  for (const Tensor* t : operands) it.strides.push_back(broadcast_strides(*t, out));
  return it;
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  LS_CHECK(a.dtype() == b.dtype(), InvalidArgumentError, op, " needs operands of one dtype, got ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ": cast one of them");
}

Device op_device(std::initializer_list<const Tensor*> operands) {
  Device device;
  for (const Tensor* t : operands) {
    if (!t->defined() || !t->device().is_gpu()) continue;
    LS_CHECK(!device.is_gpu() || device == t->device(), InvalidArgumentError, "an op's operands are on ",
             device.str(), " and ", t->device().str(), ": copy one of them with .to() first");
    device = t->device();
  }
  return device;
}

bool run_on_gpu(Device device) {
  if (!device.is_gpu()) return false;
#if LOCKSTEP_WITH_CUDA
  cuda::set_device(device.index);
#endif
  return true;
}

}  // namespace detail

namespace raw_ops {

Tensor binary(BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  detail::check_same_dtype("an elementwise op", a_in, b_in);
  const Device device = detail::op_device({&a_in, &b_in});
  const Tensor a = a_in.to(device), b = b_in.to(device);
  Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  Tensor out = Tensor::empty(out_shape, cpu::is_comparison(op) ? DType::bool_ : a.dtype(), device);
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(device)) {
    cuda::binary(op, a.dtype(), detail::broadcast_iteration(out_shape, {&a, &b}), a.device_data(), b.device_data(),
                 out.device_data());
    return out;
  }
#endif
  cpu::binary(op, a.dtype(), detail::broadcast_iteration(out_shape, {&a, &b}), a.raw_data(), b.raw_data(),
              out.raw_data());
  return out;
}

Tensor unary(UnaryOp op, const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(x.device())) {
    cuda::unary(op, x.dtype(), detail::broadcast_iteration(x.shape(), {&x}), x.device_data(), out.device_data());
    return out;
  }
#endif
  // oneDNN's vectorised transcendental functions pay off on long contiguous float32 arrays.
  static constexpr std::pair<UnaryOp, cpu::Eltwise> kOneDnn[] = {
      {UnaryOp::exp, cpu::Eltwise::exp},         {UnaryOp::log, cpu::Eltwise::log},
      {UnaryOp::tanh, cpu::Eltwise::tanh},       {UnaryOp::sigmoid, cpu::Eltwise::sigmoid},
      {UnaryOp::sqrt, cpu::Eltwise::sqrt}};
  if (x.dtype() == DType::float32 && x.is_contiguous() && x.numel() >= 4096) {
    for (auto [u, e] : kOneDnn)
      if (u == op) {
        cpu::eltwise_forward(e, x.numel(), x.data<float>(), out.data<float>());
        return out;
      }
  }
  cpu::unary(op, x.dtype(), detail::broadcast_iteration(x.shape(), {&x}), x.raw_data(), out.raw_data());
  return out;
}

Tensor where(const Tensor& cond_in, const Tensor& a_in, const Tensor& b_in) {
  LS_CHECK(cond_in.dtype() == DType::bool_, InvalidArgumentError, "where needs a bool condition, got ",
           dtype_name(cond_in.dtype()));
  detail::check_same_dtype("where", a_in, b_in);
  const Device device = detail::op_device({&cond_in, &a_in, &b_in});
  const Tensor cond = cond_in.to(device), a = a_in.to(device), b = b_in.to(device);
  Shape out_shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape()), b.shape());
  Tensor out = Tensor::empty(out_shape, a.dtype(), device);
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(device)) {
    cuda::where(a.dtype(), detail::broadcast_iteration(out_shape, {&cond, &a, &b}), cond.device_data(),
                a.device_data(), b.device_data(), out.device_data());
    return out;
  }
#endif
  cpu::where(a.dtype(), detail::broadcast_iteration(out_shape, {&cond, &a, &b}), cond.raw_data(), a.raw_data(),
             b.raw_data(), out.raw_data());
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(x.device())) {
    cuda::cast(x.dtype(), dtype, detail::broadcast_iteration(x.shape(), {&x}), x.device_data(), out.device_data());
    return out;
  }
#endif
  cpu::cast(x.dtype(), dtype, detail::broadcast_iteration(x.shape(), {&x}), x.raw_data(), out.raw_data());
  return out;
}

}  // namespace raw_ops
}  // namespace lockstep
