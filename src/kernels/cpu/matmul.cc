// Batched matrix product on oneDNN's matmul primitive. Transposes are expressed as memory strides and a batch
// stride of 0 as a batch dimension of 1, which oneDNN broadcasts, so operands are not copied, with one
// exception: a large transposed A, which is read faster once made contiguous (below).
#include <algorithm>
#include <vector>

#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;

// A rows x cols operand (after the optional transpose) of `batch` matrices `batch_stride` apart.
dnnl::memory::desc operand_desc(int64_t batch, int64_t batch_stride, int64_t rows, int64_t cols, bool transposed) {
  const int64_t b = batch_stride == 0 ? 1 : batch;
  // A batch of one never uses its stride, but a stride of 0 sends oneDNN to its slow reference matmul.
  const int64_t bs = batch_stride == 0 ? rows * cols : batch_stride;
  const Dims strides = transposed ? Dims{bs, 1, rows} : Dims{bs, cols, 1};
  return dnnl::memory::desc({b, rows, cols}, dnnl::memory::data_type::f32, strides);
}

}  // namespace

void matmul(const MatmulShape& s, const float* a, const float* b, float* c) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  // A large transposed A (a Dense layer's Xᵀ in dW = Xᵀ·dY) is read by oneDNN 86 KB apart from one element to the
  // next, and how fast that goes depends on where its pages happen to lie: the tutorial CNN's backward-weights
  // GEMM took 8-10 ms with one of the blocks the allocator handed X and 18-23 ms with the others. Transposing it
  // into a contiguous buffer first costs a millisecond and makes the GEMM the fast one every time.
  if (s.transpose_a && s.batch == 1 && s.m * s.k >= (int64_t{1} << 20)) {
    thread_local std::vector<float> at;
    at.resize(static_cast<size_t>(s.m * s.k));
    float* const out = at.data();  // OpenMP threads see their own thread_locals: they get this one by pointer
    constexpr int64_t kTile = 32;
#pragma omp parallel for schedule(static)
    for (int64_t i0 = 0; i0 < s.m; i0 += kTile) {
      for (int64_t j0 = 0; j0 < s.k; j0 += kTile) {
        const int64_t i1 = std::min(i0 + kTile, s.m), j1 = std::min(j0 + kTile, s.k);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) out[i * s.k + j] = a[j * s.m + i];
      }
    }
    MatmulShape plain = s;
    plain.transpose_a = false;
    return matmul(plain, out, b, c);
  }
  // When both operands are shared every product is the same: compute one and copy it.
  const bool shared = s.a_batch_stride == 0 && s.b_batch_stride == 0;
  const int64_t c_batch = shared ? 1 : s.batch;
  if (s.k == 0) {
    std::fill(c, c + s.batch * s.m * s.n, 0.0f);
    return;
  }
  const Key key =
      make_key(Op::matmul, {s.batch, s.m, s.n, s.k, s.transpose_a, s.transpose_b, s.a_batch_stride, s.b_batch_stride});
  Plan& plan = cached_plan(key, [&](Plan& p) {
    const auto a_md = operand_desc(s.batch, s.a_batch_stride, s.m, s.k, s.transpose_a);
    const auto b_md = operand_desc(s.batch, s.b_batch_stride, s.k, s.n, s.transpose_b);
    const auto c_md = f32_desc({c_batch, s.m, s.n}, Tag::abc);
    const dnnl::matmul::primitive_desc pd({a_md, b_md, c_md}, engine());
    p.set_main(pd,
               {{DNNL_ARG_SRC, p.slot(0, a_md)}, {DNNL_ARG_WEIGHTS, p.slot(1, b_md)}, {DNNL_ARG_DST, p.slot(2, c_md)}});
  });
  plan.run({a, b, c});
  for (int64_t i = c_batch; i < s.batch; ++i) std::copy(c, c + s.m * s.n, c + i * s.m * s.n);
}

}  // namespace lockstep::kernels::cpu
