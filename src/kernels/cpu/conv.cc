// 2-D convolution forward, backward-data and backward-weights (+bias) on oneDNN, NHWC activations and HWIO
// filters. Activations stay in NHWC; filters go through oneDNN's blocked layout (format_tag::any) with a
// reorder, since with HWIO filters oneDNN falls back to a GEMM convolution 2-3x slower (see BENCHMARKS.md).
#include <algorithm>
#include <cstring>
#include <vector>

#include "lockstep/core/threads.h"
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;
using dnnl::algorithm;
using dnnl::prop_kind;

// The descriptors of a convolution in our layouts, and the filter layout its primitives are built with.
struct ConvDescs {
  explicit ConvDescs(const Conv2dShape& s)
      : src(f32_desc({s.n, s.c, s.h, s.w}, Tag::nhwc)),
        weights(f32_desc({s.o, s.c, s.kh, s.kw}, Tag::hwio)),
        weights_any(f32_desc({s.o, s.c, s.kh, s.kw}, Tag::any)),
        bias(f32_desc({s.o}, Tag::a)),
        dst(f32_desc({s.n, s.o, s.out_h(), s.out_w()}, Tag::nhwc)),
        strides{s.stride_h, s.stride_w},
        pad_l{s.pad_top, s.pad_left},
        pad_r{s.pad_bottom, s.pad_right} {}
  dnnl::memory::desc src, weights, weights_any, bias, dst;
  Dims strides, pad_l, pad_r;
};

Key conv_key(Op op, const Conv2dShape& s, bool bias) {
  return make_key(op, {s.n, s.h, s.w, s.c, s.kh, s.kw, s.o, s.stride_h, s.stride_w, s.pad_top, s.pad_left, s.pad_bottom,
                       s.pad_right, bias});
}

// Also the hint the backward primitives need to pick matching implementations.
dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, bool bias) {
  using Desc = dnnl::convolution_forward::desc;
  const auto kind = prop_kind::forward_training;
  const auto algo = algorithm::convolution_direct;
  return {bias ? Desc(kind, algo, d.src, d.weights_any, d.bias, d.dst, d.strides, d.pad_l, d.pad_r)
               : Desc(kind, algo, d.src, d.weights_any, d.dst, d.strides, d.pad_l, d.pad_r),
          engine()};
}

// With few input channels (an image model's first layer: 1 or 3), oneDNN's direct backward-weights kernel
// vectorises over channels that are not there and runs at a fifth of the speed of a GEMM (2.2 ms against 1.0
// ms for 64x28x28x1 -> 32 on a Zen 2 core); from 32 channels on it is as fast. Below this size, im2col and one
// matmul do the work instead.
bool backward_weights_by_im2col(const Conv2dShape& s) { return s.kh * s.kw * s.c <= 32; }

// dw (and dbias) = cols · dy, where column (n, oh, ow) of cols holds the kh·kw·c input values under that output
// (zeros in the padding) and, when dbias is wanted, a trailing 1, whose product row is the sum of dy. cols is
// built row by row, each row a run over ow that is contiguous for one input channel and stride 1, and the
// product's rows come out in HWIO order. The buffers are kept per thread: a warm call allocates nothing.
void conv2d_backward_weights_im2col(const Conv2dShape& s, const float* x, const float* dy, float* dw, float* dbias) {
  const int64_t oh_n = s.out_h(), ow_n = s.out_w(), cols_n = s.n * oh_n * ow_n;
  const int64_t patch = s.kh * s.kw * s.c, rows_n = patch + (dbias ? 1 : 0);
  thread_local std::vector<float> cols, product;
  cols.resize(static_cast<size_t>(rows_n * cols_n));
  product.resize(static_cast<size_t>(rows_n * s.o));
  // The OpenMP threads below see their own (empty) thread_locals: they get this thread's buffer by pointer.
  float* const cols_data = cols.data();
  const int64_t h = s.h, w = s.w, c = s.c, sw = s.stride_w;
  auto fill = [&, h, w, c, sw](int64_t r) {
    const int64_t kh = r / (s.kw * c), kw = r / c % s.kw, ci = r % c;
    float* out = cols_data + r * cols_n;
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t oh = 0; oh < oh_n; ++oh, out += ow_n) {
        const int64_t ih = oh * s.stride_h - s.pad_top + kh;
        if (ih < 0 || ih >= h) {
          std::fill(out, out + ow_n, 0.0f);
          continue;
        }
        const float* in = x + (n * h + ih) * w * c + ci;
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          const int64_t iw = ow * sw - s.pad_left + kw;
          out[ow] = iw >= 0 && iw < w ? in[iw * c] : 0.0f;
        }
      }
    }
  };
  parallel_for(patch, patch > 1 && patch * cols_n >= (int64_t{1} << 16), fill);
  if (dbias) std::fill(cols.data() + patch * cols_n, cols.data() + rows_n * cols_n, 1.0f);
  matmul({.batch = 1, .m = rows_n, .n = s.o, .k = cols_n, .transpose_a = false, .transpose_b = false,
          .a_batch_stride = 0, .b_batch_stride = 0},
         cols.data(), dy, product.data());
  std::memcpy(dw, product.data(), static_cast<size_t>(patch * s.o) * sizeof(float));
  if (dbias) std::memcpy(dbias, product.data() + patch * s.o, static_cast<size_t>(s.o) * sizeof(float));
}

}  // namespace

void conv2d_forward(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y) {
  const bool has_bias = bias != nullptr;
  Plan& plan = cached_plan(conv_key(Op::conv_fwd, s, has_bias), [&](Plan& p) {
    const ConvDescs d(s);
    const auto pd = forward_pd(d, has_bias);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.input(p.slot(0, d.src), pd.src_desc())},
                                               {DNNL_ARG_WEIGHTS, p.input(p.slot(1, d.weights), pd.weights_desc())},
                                               {DNNL_ARG_DST, p.output(p.slot(2, d.dst), pd.dst_desc())}};
    if (has_bias) args[DNNL_ARG_BIAS] = p.input(p.slot(3, d.bias), pd.bias_desc());
    p.set_main(pd, args);
  });
  plan.run({x, w, y, bias});
}

void conv2d_backward_data(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
  Plan& plan = cached_plan(conv_key(Op::conv_bwd_data, s, false), [&](Plan& p) {
    const ConvDescs d(s);
    const dnnl::convolution_backward_data::primitive_desc pd(
        {algorithm::convolution_direct, d.src, d.weights_any, d.dst, d.strides, d.pad_l, d.pad_r}, engine(),
        forward_pd(d, false));
    p.set_main(pd, {{DNNL_ARG_DIFF_DST, p.input(p.slot(0, d.dst), pd.diff_dst_desc())},
                    {DNNL_ARG_WEIGHTS, p.input(p.slot(1, d.weights), pd.weights_desc())},
                    {DNNL_ARG_DIFF_SRC, p.output(p.slot(2, d.src), pd.diff_src_desc())}});
  });
  plan.run({dy, w, dx});
}

void conv2d_backward_weights(const Conv2dShape& s, const float* x, const float* dy, float* dw, float* dbias) {
  if (backward_weights_by_im2col(s)) return conv2d_backward_weights_im2col(s, x, dy, dw, dbias);
  const bool has_bias = dbias != nullptr;
  Plan& plan = cached_plan(conv_key(Op::conv_bwd_weights, s, has_bias), [&](Plan& p) {
    using Desc = dnnl::convolution_backward_weights::desc;
    const ConvDescs d(s);
    const auto algo = algorithm::convolution_direct;
    const dnnl::convolution_backward_weights::primitive_desc pd(
        has_bias ? Desc(algo, d.src, d.weights_any, d.bias, d.dst, d.strides, d.pad_l, d.pad_r)
                 : Desc(algo, d.src, d.weights_any, d.dst, d.strides, d.pad_l, d.pad_r),
        engine(), forward_pd(d, has_bias));
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, p.input(p.slot(0, d.src), pd.src_desc())},
        {DNNL_ARG_DIFF_DST, p.input(p.slot(1, d.dst), pd.diff_dst_desc())},
        {DNNL_ARG_DIFF_WEIGHTS, p.output(p.slot(2, d.weights), pd.diff_weights_desc())}};
    if (has_bias) args[DNNL_ARG_DIFF_BIAS] = p.output(p.slot(3, d.bias), pd.diff_bias_desc());
    p.set_main(pd, args);
  });
  plan.run({x, dy, dw, dbias});
}

}  // namespace lockstep::kernels::cpu
