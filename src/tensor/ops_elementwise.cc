// Elementwise ops: broadcasting binary and unary math, where, cast.
#include "lockstep/kernels/cpu/kernels.h"
#include "lockstep/tensor/ops.h"
#include "ops-impl.h"

namespace lockstep {

namespace cpu = kernels::cpu;

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

}  // namespace detail

namespace raw_ops {

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  detail::check_same_dtype("an elementwise op", a, b);
  Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  Tensor out = Tensor::empty(out_shape, cpu::is_comparison(op) ? DType::bool_ : a.dtype());
  cpu::binary(op, a.dtype(), detail::broadcast_iteration(out_shape, {&a, &b}), a.raw_data(), b.raw_data(),
              out.raw_data());
  return out;
}

Tensor unary(UnaryOp op, const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
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

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  LS_CHECK(cond.dtype() == DType::bool_, InvalidArgumentError, "where needs a bool condition, got ",
           dtype_name(cond.dtype()));
  detail::check_same_dtype("where", a, b);
  Shape out_shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape()), b.shape());
  Tensor out = Tensor::empty(out_shape, a.dtype());
  cpu::where(a.dtype(), detail::broadcast_iteration(out_shape, {&cond, &a, &b}), cond.raw_data(), a.raw_data(),
             b.raw_data(), out.raw_data());
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), dtype);
  cpu::cast(x.dtype(), dtype, detail::broadcast_iteration(x.shape(), {&x}), x.raw_data(), out.raw_data());
  return out;
}

}  // namespace raw_ops
}  // namespace lockstep
