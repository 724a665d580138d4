// Elementwise activations (relu, tanh, sigmoid, exp, log, sqrt) on oneDNN's eltwise primitive, over a flat
// array of n floats.
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;

dnnl::algorithm eltwise_algorithm(Eltwise kind) {
  switch (kind) {
    case Eltwise::relu: return dnnl::algorithm::eltwise_relu;
    case Eltwise::tanh: return dnnl::algorithm::eltwise_tanh;
    case Eltwise::sigmoid: return dnnl::algorithm::eltwise_logistic;
    case Eltwise::exp: return dnnl::algorithm::eltwise_exp;
    case Eltwise::log: return dnnl::algorithm::eltwise_log;
    case Eltwise::sqrt: return dnnl::algorithm::eltwise_sqrt;
  }
  return dnnl::algorithm::undef;
}

}  // namespace

void eltwise_forward(Eltwise kind, int64_t n, const float* x, float* y) {
  if (n == 0) return;
  Plan& plan = cached_plan(make_key(Op::eltwise, {static_cast<int64_t>(kind), n}), [&](Plan& p) {
    const auto md = f32_desc({n}, Tag::a);
    // alpha = 0: relu's slope for negative inputs; unused by the others.
    const dnnl::eltwise_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, eltwise_algorithm(kind), md, 0.0f, 0.0f}, engine());
    p.set_main(pd, {{DNNL_ARG_SRC, p.slot(0, md)}, {DNNL_ARG_DST, p.slot(1, md)}});
  });
  plan.run({x, y});
}

}  // namespace lockstep::kernels::cpu
