// Softmax and log-softmax over the last axis of a rows x cols matrix, forward and backward, on oneDNN's
// softmax and logsoftmax primitives, with TF's NaN rows.
#include <algorithm>
#include <limits>

#include "lockstep/core/threads.h"
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;
constexpr int kAxis = 1;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Fills with NaN each row of out whose row of `in` is_nan_row says TF makes NaN throughout. One pass over rows that
// are usually short and still in cache; the flags are integer reductions, so the scan vectorises.
template <typename IsNanRow>
void fill_nan_rows(int64_t rows, int64_t cols, const float* in, float* out, IsNanRow is_nan_row) {
  parallel_for(rows, rows > 1 && rows * cols >= (int64_t{1} << 16), [&](int64_t r) {
    if (is_nan_row(in + r * cols))
      std::fill(out + r * cols, out + (r + 1) * cols, std::numeric_limits<float>::quiet_NaN());
  });
}

// TF computes exp(x - max(x)) and its sum: a row holding NaN or +Inf, or only -Inf, is NaN throughout, where oneDNN
// leaves 0 or -Inf beside a NaN.
void forward_nan_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  fill_nan_rows(rows, cols, x, y, [cols](const float* xr) {
    int nan_or_inf = 0, only_minus_inf = 1;
    for (int64_t i = 0; i < cols; ++i) {
      nan_or_inf |= !(xr[i] < kInf);
      only_minus_inf &= xr[i] == -kInf;
    }
    return (nan_or_inf | only_minus_inf) != 0;
  });
}

// A NaN in a row of y (forward_nan_rows makes such rows wholly NaN) makes the row's gradient NaN, as TF's formulas
// do; oneDNN's log-softmax backward gives -Inf there.
void backward_nan_rows(int64_t rows, int64_t cols, const float* y, float* dx) {
  fill_nan_rows(rows, cols, y, dx, [cols](const float* yr) {
    int nan = 0;
    for (int64_t i = 0; i < cols; ++i) nan |= yr[i] != yr[i];
    return nan != 0;
  });
}

}  // namespace

void softmax_forward(int64_t rows, int64_t cols, const float* x, float* y, bool log) {
  // One class: exactly 1 (log-softmax 0). oneDNN's AVX2 kernels are off there (exp(0) is approximated;
  // AVX-512 machines were exact), and the backward pass below relies on it.
  if (cols == 1) {
    std::fill(y, y + rows, log ? 0.0f : 1.0f);
    return forward_nan_rows(rows, cols, x, y);
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
  forward_nan_rows(rows, cols, x, y);
}

void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx, bool log) {
  // One class: the output is a constant, so its gradient is exactly 0 (oneDNN's AVX2 kernel gave up to 1e-2).
  if (cols == 1) {
    std::fill(dx, dx + rows, 0.0f);
    return backward_nan_rows(rows, cols, y, dx);
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
  backward_nan_rows(rows, cols, y, dx);
}

}  // namespace lockstep::kernels::cpu
