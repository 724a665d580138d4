// Elementwise activations (relu, tanh, sigmoid, exp, log, sqrt) on oneDNN's eltwise primitive, over a flat
// array of n floats.
#include <algorithm>

#include "lockstep/core/threads.h"
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

// One primitive over n floats.
void run_eltwise(Eltwise kind, int64_t n, const float* x, float* y) {
  Plan& plan = cached_plan(make_key(Op::eltwise, {static_cast<int64_t>(kind), n}), [&](Plan& p) {
    const auto md = f32_desc({n}, Tag::a);
    // alpha = 0: relu's slope for negative inputs; unused by the others.
    const dnnl::eltwise_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, eltwise_algorithm(kind), md, 0.0f, 0.0f}, engine());
    p.set_main(pd, {{DNNL_ARG_SRC, p.slot(0, md)}, {DNNL_ARG_DST, p.slot(1, md)}});
  });
  plan.run({x, y});
}

}  // namespace

void eltwise_forward(Eltwise kind, int64_t n, const float* x, float* y) {
  if (n == 0) return;
  if (kind != Eltwise::exp) return run_eltwise(kind, n, x, y);
  // oneDNN's exp gives +Inf for NaN, TF's NaN. Blocks that stay in cache run the primitive, a thread each, then are
  // scanned for NaN while still hot and only then mended: a pass over whole arrays after the primitive cost 35-50%
  // of the exp, the scan of a hot block about 20%.
  constexpr int64_t kBlock = int64_t{1} << 14;
  parallel_for((n + kBlock - 1) / kBlock, n > kBlock, [&](int64_t b) {
    const int64_t m = std::min(kBlock, n - b * kBlock);
    const float* xb = x + b * kBlock;
    float* yb = y + b * kBlock;
    run_eltwise(kind, m, xb, yb);
    int nan = 0;
    for (int64_t i = 0; i < m; ++i) nan |= xb[i] != xb[i];
    if (nan)
      for (int64_t i = 0; i < m; ++i)
        if (xb[i] != xb[i]) yb[i] = xb[i];
  });
}

}  // namespace lockstep::kernels::cpu
