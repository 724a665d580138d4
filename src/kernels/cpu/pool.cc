// 2-D max and average pooling, forward and backward, on oneDNN in NHWC. Max pooling runs forward_training so
// that oneDNN writes a workspace (the argmax of each window), which the backward pass reads back. oneDNN's max, like
// TF's, skips NaN and starts from the lowest finite value (the op harness's NaN rows hold both to it).
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;

Key pool_key(Op op, const Pool2dShape& s) {
  return make_key(op, {s.n, s.h, s.w, s.c, s.kh, s.kw, s.stride_h, s.stride_w, s.pad_top, s.pad_left, s.pad_bottom,
                       s.pad_right, static_cast<int64_t>(s.kind)});
}

dnnl::algorithm pool_algorithm(PoolKind kind) {
  // TF's SAME average pooling divides by the number of inputs inside the image.
  return kind == PoolKind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

struct PoolDescs {
  explicit PoolDescs(const Pool2dShape& s)
      : src(f32_desc({s.n, s.c, s.h, s.w}, Tag::nhwc)),
        dst(f32_desc({s.n, s.c, s.out_h(), s.out_w()}, Tag::nhwc)),
        strides{s.stride_h, s.stride_w},
        kernel{s.kh, s.kw},
        pad_l{s.pad_top, s.pad_left},
        pad_r{s.pad_bottom, s.pad_right} {}
  dnnl::memory::desc src, dst;
  Dims strides, kernel, pad_l, pad_r;
};

dnnl::pooling_forward::primitive_desc forward_pd(const Pool2dShape& s) {
  const PoolDescs d(s);
  return {
      {dnnl::prop_kind::forward_training, pool_algorithm(s.kind), d.src, d.dst, d.strides, d.kernel, d.pad_l, d.pad_r},
      engine()};
}

Plan& forward_plan(const Pool2dShape& s) {
  return cached_plan(pool_key(Op::pool_fwd, s), [&](Plan& p) {
    const auto pd = forward_pd(s);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.slot(0, pd.src_desc())},
                                               {DNNL_ARG_DST, p.slot(1, pd.dst_desc())}};
    if (s.kind == PoolKind::max) args[DNNL_ARG_WORKSPACE] = p.slot(2, pd.workspace_desc());
    p.set_main(pd, args);
  });
}

}  // namespace

size_t pool2d_workspace_bytes(const Pool2dShape& s) {
  return s.kind == PoolKind::max ? forward_plan(s).slot_bytes(2) : 0;
}

void pool2d_forward(const Pool2dShape& s, const float* x, float* y, void* workspace) {
  forward_plan(s).run({x, y, workspace});
}

void pool2d_backward(const Pool2dShape& s, const float* dy, const void* workspace, float* dx) {
  Plan& plan = cached_plan(pool_key(Op::pool_bwd, s), [&](Plan& p) {
    const PoolDescs d(s);
    const auto fwd = forward_pd(s);
    const dnnl::pooling_backward::primitive_desc pd(
        {pool_algorithm(s.kind), d.src, d.dst, d.strides, d.kernel, d.pad_l, d.pad_r}, engine(), fwd);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, p.slot(0, pd.diff_dst_desc())},
                                               {DNNL_ARG_DIFF_SRC, p.slot(2, pd.diff_src_desc())}};
    if (s.kind == PoolKind::max) args[DNNL_ARG_WORKSPACE] = p.slot(1, fwd.workspace_desc());
    p.set_main(pd, args);
  });
  plan.run({dy, workspace, dx});
}

}  // namespace lockstep::kernels::cpu
