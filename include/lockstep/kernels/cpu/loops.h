// Hand-written loops over raw strided buffers: elementwise ops with broadcasting, casts, reductions,
// and the fused sparse softmax cross-entropy. Inner loops are specialised for unit and zero strides so
// the compiler vectorises them; large loops are split across the OpenMP pool.
#pragma once
#include <cstdint>
#include <vector>

#include "lockstep/core/dtype.h"

namespace lockstep::kernels::cpu {

// relu_grad: a where b > 0, else 0 (a = dy, b = relu's output): relu's gradient in one pass, no mask tensor.
// The comparisons and logical ops come last (is_comparison).
enum class Binary { add, sub, mul, div, pow, maximum, minimum, relu_grad, equal, not_equal, less, less_equal, greater,
                    greater_equal, logical_and, logical_or };
enum class Unary { neg, exp, log, sqrt, rsqrt, square, abs, sign, relu, sigmoid, tanh, logical_not };
// sum_of_squares adds x * x, each product rounded in x's type as square() rounds it (tf.nn.l2_loss's reduction,
// without a squared copy of x).
enum class Reduce { sum, max, min, sum_of_squares };

bool is_comparison(Binary op);  // comparisons and logical ops produce bool

// An n-d iteration: `dims` of the output, and for each operand its element strides (0 on broadcast axes).
struct Iteration {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // one list per operand, output excluded (it is contiguous)
};
// The same iteration with the adjacent axes that every operand walks contiguously merged and the axes of extent 1
// dropped, so most loops become one long unit-stride row; a scalar becomes one axis of extent 1 and stride 0.
// Row-major order is kept: a flat index over the result is a flat index over in.dims.
Iteration coalesce(const Iteration& in);

// out (contiguous, dims) = a op b. dtype is that of a and b; out is bool for comparisons. bfloat16 is computed in
// float32 and rounded as each element is stored.
void binary(Binary op, DType dtype, const Iteration& it, const void* a, const void* b, void* out);
void unary(Unary op, DType dtype, const Iteration& it, const void* x, void* out);
// out = cond ? a : b; cond is bool, three operands in `it`.
void where(DType dtype, const Iteration& it, const void* cond, const void* a, const void* b, void* out);
void cast(DType from, DType to, const Iteration& it, const void* x, void* out);
// Reduces x (dims, strides[0]) into out, whose strides over x's dims are out_strides (0 on reduced axes).
// Floating sums accumulate in double, so results do not depend on thread count.
void reduce(Reduce op, DType dtype, const Iteration& it, const std::vector<int64_t>& out_strides, const void* x,
            void* out, int64_t out_numel);
// Index of the first maximum along the middle axis of a contiguous [outer, n, inner] array; NaN is never chosen
// (TensorFlow's rule: the scan starts at the lowest finite value and moves only to greater elements).
void argmax(DType dtype, int64_t outer, int64_t n, int64_t inner, const void* x, int64_t* out);

// loss[i] = -log softmax(logits[i])[labels[i]], probs = softmax(logits); logits [n, c] contiguous.
// labels int32 or int64; throws InvalidArgumentError naming a label outside [0, c).
template <typename T, typename L>
void sparse_softmax_xent_forward(int64_t n, int64_t c, const T* logits, const L* labels, T* loss, T* probs);
// dlogits = (probs - one_hot(labels)) * dloss[:, None].
template <typename T, typename L>
void sparse_softmax_xent_backward(int64_t n, int64_t c, const T* probs, const L* labels, const T* dloss, T* dlogits);

}  // namespace lockstep::kernels::cpu
