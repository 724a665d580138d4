// GPU kernels on raw device pointers, the CUDA counterparts of lockstep/kernels/cpu: cuBLAS for matmul, cuDNN for
// convolution and softmax, kernels of our own for elementwise ops, reductions, pooling, cross-entropy, gathers and
// the optimizers' updates. Knows nothing of Tensor. Layouts and semantics are the CPU kernels' (NHWC activations,
// HWIO filters, TF's padding and rounding rules), so a GPU result differs from the CPU's only in the order of
// floating-point additions.
//
// Every call runs on the calling thread's current device (set_device), on that device's one stream, and returns
// without waiting for the GPU (except where it says it synchronizes): work on one device runs in call order, so
// memory freed to the caching allocator is safe to reuse by the next call. Errors of CUDA, cuBLAS and cuDNN throw
// lockstep::Error naming the device and the call ("CUDA error on /gpu:0 in cudaMalloc(...): out of memory").
// Declared in every build; defined only in a build with CUDA (LOCKSTEP_WITH_CUDA), where runtime.h's
// device_count() may be nonzero.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lockstep/core/dtype.h"
#include "lockstep/kernels/cpu/kernels.h"
#include "lockstep/kernels/cpu/loops.h"

namespace lockstep::kernels::cuda {

using cpu::Binary;
using cpu::Conv2dShape;
using cpu::Iteration;
using cpu::MatmulShape;
using cpu::Pool2dShape;
using cpu::Reduce;
using cpu::Unary;

// ---- elementwise (elementwise.cu) ----
// As cpu::binary, unary, where and cast: out is contiguous over it.dims, operands are read through their strides
// (0 on broadcast axes). bfloat16 is computed in float32 and rounded to nearest even as each element is stored.
void binary(Binary op, DType dtype, const Iteration& it, const void* a, const void* b, void* out);
void unary(Unary op, DType dtype, const Iteration& it, const void* x, void* out);
void where(DType dtype, const Iteration& it, const void* cond, const void* a, const void* b, void* out);
void cast(DType from, DType to, const Iteration& it, const void* x, void* out);
// out[i] = value for n elements of dtype.
void fill(DType dtype, int64_t n, double value, void* out);
// dst[at dst_strides] = src[at src_strides] over dims, element size esize bytes (1, 2, 4 or 8): a strided copy in
// either direction (contiguous() of a view, copy_from into a slice).
void copy_strided(size_t esize, const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                  const void* src, const std::vector<int64_t>& dst_strides, void* dst);

// ---- reductions (elementwise.cu) ----
// As cpu::reduce: x over it.dims with it.strides[0]; out's strides over x's dims are out_strides (0 on reduced
// axes); out has out_numel elements. Floating sums accumulate in double (float64: double), integer sums in int64,
// in a fixed order, so results are deterministic run to run.
void reduce(Reduce op, DType dtype, const Iteration& it, const std::vector<int64_t>& out_strides, const void* x,
            void* out, int64_t out_numel);
// Index of the first maximum along the middle axis of a contiguous [outer, n, inner] array (float32/float64/ints).
void argmax(DType dtype, int64_t outer, int64_t n, int64_t inner, const void* x, int64_t* out);

// ---- optimizer updates (elementwise.cu), Keras 3's rules exactly as src/keras/optimizers/ computes them ----
// T is float or double; scalars arrive already in T's precision semantics as the CPU computes them.
template <typename T> void sgd_update(int64_t n, T* w, const T* g, T* momentum, T lr, T mu, bool nesterov);
// velocity v, optional momentum m and average gradient a (null when off); one_minus_rho rounded from double as the
// CPU rounds it.
template <typename T>
void rmsprop_update(int64_t n, T* w, const T* g, T* v, T* m, T* a, T lr, T rho, T one_minus_rho, T eps, T mu);
// m, v and vhat (null unless amsgrad); alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t).
template <typename T>
void adam_update(int64_t n, T* w, const T* g, T* m, T* v, T* vhat, T alpha, T one_minus_b1, T one_minus_b2, T eps);
// accumulator += g^2, then w -= lr * g / sqrt(accumulator + eps).
template <typename T> void adagrad_update(int64_t n, T* w, const T* g, T* accumulator, T lr, T eps);

// ---- linear algebra and neural-network kernels (nn.cu); T is float or double ----
// As cpu::matmul, with cuBLAS (strided batched GEMM). TF32 is never used: float32 products are full float32.
template <typename T> void matmul(const MatmulShape& s, const T* a, const T* b, T* c);
// As cpu::conv2d_*, with cuDNN. Asymmetric padding (TF's "SAME" with an odd total) is supported.
template <typename T> void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y);
template <typename T> void conv2d_backward_data(const Conv2dShape& s, const T* dy, const T* w, T* dx);
template <typename T> void conv2d_backward_weights(const Conv2dShape& s, const T* x, const T* dy, T* dw, T* dbias);
// Pooling, NHWC, TF's semantics (average excludes padding). max pooling's workspace is the int32 index (within the
// image, h * w + w) of each output's maximum, out_h * out_w * c * n of them; the backward pass is deterministic
// (each input element sums the outputs that chose it).
size_t pool2d_workspace_bytes(const Pool2dShape& s);
template <typename T> void pool2d_forward(const Pool2dShape& s, const T* x, T* y, void* workspace);
template <typename T> void pool2d_backward(const Pool2dShape& s, const T* dy, const void* workspace, T* dx);
// Softmax over the last axis of a rows x cols matrix; log_softmax when `log` (cuDNN).
template <typename T> void softmax_forward(int64_t rows, int64_t cols, const T* x, T* y, bool log);
template <typename T> void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx, bool log);
// As cpu::sparse_softmax_xent_*; L is int32_t or int64_t. A label outside [0, c) throws InvalidArgumentError naming
// it (the forward pass synchronizes to check).
template <typename T, typename L>
void sparse_softmax_xent_forward(int64_t n, int64_t c, const T* logits, const L* labels, T* loss, T* probs);
template <typename T, typename L>
void sparse_softmax_xent_backward(int64_t n, int64_t c, const T* probs, const L* labels, const T* dloss, T* dlogits);

// ---- gathers (nn.cu); indices are int32 or int64 (index_dtype), checked to lie in [0, rows) ----
// out[i, :] = params[indices[i], :] for `count` indices, rows of `row_bytes` bytes. Throws InvalidArgumentError
// naming the first index out of range (synchronizes to check).
void gather_rows(DType index_dtype, const void* indices, int64_t count, const void* params, int64_t rows,
                 size_t row_bytes, void* out);
// out (rows x row, zeroed here) += dy rows at indices, deterministic (no atomics: each output row sums its
// occurrences in index order). dtype float32/float64/int32/int64.
void scatter_add_rows(DType dtype, DType index_dtype, const void* indices, int64_t count, const void* dy, int64_t rows,
                      int64_t row, void* out);
// out [count, depth] = off everywhere, on at [i, indices[i]] when that index lies in [0, depth).
void one_hot(DType index_dtype, const void* indices, int64_t count, int64_t depth, DType dtype, double on_value,
             double off_value, void* out);

}  // namespace lockstep::kernels::cuda
