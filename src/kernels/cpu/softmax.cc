// Softmax and log-softmax over the last axis of a rows x cols matrix, forward and backward, on oneDNN's
// softmax and logsoftmax primitives.
#include <algorithm>

#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;
constexpr int kAxis = 1;

}  // namespace

void softmax_forward(int64_t rows, int64_t cols, const float* x, float* y, bool log) {
  // One class: exactly 1 (log-softmax 0). oneDNN's AVX2 kernels are off there (exp(0) is approximated;
  // AVX-512 machines were exact), and the backward pass below relies on it.
  if (cols == 1) {
    std::fill(y, y + rows, log ? 0.0f : 1.0f);
    return;
  }
  Plan& plan = cached_plan(make_key(Op::softmax_fwd, {rows, cols, log}), [&](Plan& p) {
    const auto md = f32_desc({rows, cols}, Tag::ab);
    const auto kind = dnnl::prop_kind::forward_training;
    const std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.slot(0, md)}, {DNNL_ARG_DST, p.slot(1, md)}};
    if (log) {
      p.set_main(dnnl::logsoftmax_forward::primitive_desc({kind, md, kAxis}, engine()), args);
    } else {
      p.set_main(dnnl::softmax_forward::primitive_desc({kind, md, kAxis}, engine()), args);
    }
  });
  plan.run({x, y});
}

void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx, bool log) {
  // One class: the output is a constant, so its gradient is exactly 0 (oneDNN's AVX2 kernel gave up to 1e-2).
  if (cols == 1) {
    std::fill(dx, dx + rows, 0.0f);
    return;
  }
  Plan& plan = cached_plan(make_key(Op::softmax_bwd, {rows, cols, log}), [&](Plan& p) {
    const auto md = f32_desc({rows, cols}, Tag::ab);
    const auto kind = dnnl::prop_kind::forward_training;
    const std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_DST, p.slot(0, md)}, {DNNL_ARG_DIFF_DST, p.slot(1, md)}, {DNNL_ARG_DIFF_SRC, p.slot(2, md)}};
    // The two kinds are distinct C++ types, each needing its own forward descriptor as a hint.
    if (log) {
      const dnnl::logsoftmax_forward::primitive_desc hint({kind, md, kAxis}, engine());
      p.set_main(dnnl::logsoftmax_backward::primitive_desc({md, md, kAxis}, engine(), hint), args);
    } else {
      const dnnl::softmax_forward::primitive_desc hint({kind, md, kAxis}, engine());
      p.set_main(dnnl::softmax_backward::primitive_desc({md, md, kAxis}, engine(), hint), args);
    }
  });
  plan.run({y, dy, dx});
}

}  // namespace lockstep::kernels::cpu
