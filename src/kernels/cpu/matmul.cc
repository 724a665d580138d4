// Batched matrix product on oneDNN's matmul primitive. Transposes are expressed as memory strides and a batch
// stride of 0 as a batch dimension of 1, which oneDNN broadcasts, so operands are not copied, with one
// exception: a large transposed A, which is read faster once made contiguous (below).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "lockstep/kernels/cpu/features.h"
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

using namespace onednn;

using DataType = dnnl::memory::data_type;

// A rows x cols operand (after the optional transpose) of `batch` matrices `batch_stride` apart.
dnnl::memory::desc operand_desc(int64_t batch, int64_t batch_stride, int64_t rows, int64_t cols, bool transposed,
                                DataType type) {
  const int64_t b = batch_stride == 0 ? 1 : batch;
  // A batch of one never uses its stride, but a stride of 0 sends oneDNN to its slow reference matmul.
  const int64_t bs = batch_stride == 0 ? rows * cols : batch_stride;
  const Dims strides = transposed ? Dims{bs, 1, rows} : Dims{bs, cols, 1};
  return dnnl::memory::desc({b, rows, cols}, type, strides);
}

// A large transposed A (a Dense layer's Xᵀ in dW = Xᵀ·dY) is read by oneDNN 86 KB apart from one element to the
// next, and how fast that goes depends on where its pages happen to lie: the tutorial CNN's backward-weights
// GEMM took 8-10 ms with one of the blocks the allocator handed X and 18-23 ms with the others (on Zen 2).
// oneDNN's reorder makes it contiguous first, in the plan's own buffer, and the GEMM is the fast one every time.
// Not for bfloat16: there the copy cost more than the GEMM saved (11% of a mixed_bfloat16 step, under perf).
bool worth_transposing(const MatmulShape& s, bool is_float) {
  return is_float && s.transpose_a && s.batch == 1 && s.m * s.k >= (int64_t{1} << 20);
}

template <typename T> void onednn_matmul(const MatmulShape& s, const T* a, const T* b, T* c) {
  // When both operands are shared every product is the same: compute one and copy it.
  const bool shared = s.a_batch_stride == 0 && s.b_batch_stride == 0;
  const int64_t c_batch = shared ? 1 : s.batch;
  if (s.k == 0) {
    std::fill(c, c + s.batch * s.m * s.n, T(0.0f));
    return;
  }
  const DataType type = std::is_same_v<T, float> ? DataType::f32 : DataType::bf16;
  const bool transpose_first = worth_transposing(s, std::is_same_v<T, float>);
  const Key key = make_key(Op::matmul, {s.batch, s.m, s.n, s.k, s.transpose_a, s.transpose_b, s.a_batch_stride,
                                        s.b_batch_stride, static_cast<int64_t>(type)});
  Plan& plan = cached_plan(key, [&](Plan& p) {
    const auto a_md = operand_desc(s.batch, s.a_batch_stride, s.m, s.k, s.transpose_a, type);
    const auto b_md = operand_desc(s.batch, s.b_batch_stride, s.k, s.n, s.transpose_b, type);
    const auto c_md = dnnl::memory::desc({c_batch, s.m, s.n}, type, Tag::abc);
    const auto src_md = transpose_first ? operand_desc(s.batch, s.a_batch_stride, s.m, s.k, false, type) : a_md;
    const dnnl::matmul::primitive_desc pd({src_md, b_md, c_md}, engine());
    p.set_main(pd, {{DNNL_ARG_SRC, p.input(p.slot(0, a_md), src_md)},
                    {DNNL_ARG_WEIGHTS, p.slot(1, b_md)},
                    {DNNL_ARG_DST, p.slot(2, c_md)}});
  });
  plan.run({a, b, c});
  for (int64_t i = c_batch; i < s.batch; ++i) std::copy(c, c + s.m * s.n, c + i * s.m * s.n);
}

// `count` bfloat16 values as float32 in this thread's buffer number `slot`.
float* widened(const bfloat16* x, int64_t count, int slot) {
  thread_local std::vector<float> buffers[3];
  std::vector<float>& out = buffers[slot];
  out.resize(static_cast<size_t>(count));
  if (x)
    for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = static_cast<float>(x[i]);
  return out.data();
}

}  // namespace

bool has_bfloat16_matmul() {
  // oneDNN 2.6 offers bfloat16 matmuls on AVX-512 without bfloat16 instructions too, emulated: on the tutorial CNN's
  // Dense shapes 4x slower than its float32 GEMM (ONEDNN_MAX_CPU_ISA=AVX512_CORE), where widening costs far less.
  static const bool has = [] {
    if (!cpu_features().bfloat16_instructions) return false;
    try {
      const auto md = dnnl::memory::desc({1, 16, 16}, DataType::bf16, Tag::abc);
      dnnl::matmul::primitive_desc({md, md, md}, engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

void matmul(const MatmulShape& s, const bfloat16* a, const bfloat16* b, bfloat16* c) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (has_bfloat16_matmul()) return onednn_matmul(s, a, b, c);
  // Operands are packed: one matrix, or one per batch entry.
  const int64_t a_count = (s.a_batch_stride == 0 ? 1 : s.batch) * s.m * s.k;
  const int64_t b_count = (s.b_batch_stride == 0 ? 1 : s.batch) * s.k * s.n;
  const int64_t c_count = s.batch * s.m * s.n;
  float* const c32 = widened(nullptr, c_count, 2);
  matmul(s, widened(a, a_count, 0), widened(b, b_count, 1), c32);
  for (int64_t i = 0; i < c_count; ++i) c[i] = bfloat16(c32[i]);
}

void matmul(const MatmulShape& s, const float* a, const float* b, float* c) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  onednn_matmul(s, a, b, c);
}

}  // namespace lockstep::kernels::cpu
