// 2-D convolution forward, backward-data and backward-weights (+bias) on oneDNN, NHWC activations and HWIO
// filters. Activations stay in NHWC; filters go through oneDNN's blocked layout (format_tag::any) with a
// reorder, since with HWIO filters oneDNN falls back to a GEMM convolution 2-3x slower (see BENCHMARKS.md).
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
