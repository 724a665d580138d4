// CPU kernels on raw pointers: oneDNN primitives (created once per shape and cached) for convolution,
// pooling, matmul, softmax and eltwise, in float32. Knows nothing of Tensor. Layouts are Keras':
// activations NHWC, convolution filters HWIO. Outputs are overwritten, never accumulated into.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lockstep/core/dtype.h"

namespace lockstep::kernels::cpu {

// Convolution geometry. Padding is explicit (top/left/bottom/right); out_h/out_w follow from it.
struct Conv2dShape {
  int64_t n, h, w, c;     // input NHWC
  int64_t kh, kw, o;      // filters HWIO: kh x kw x c x o
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t out_h() const { return (h + pad_top + pad_bottom - kh) / stride_h + 1; }
  int64_t out_w() const { return (w + pad_left + pad_right - kw) / stride_w + 1; }
};

// y[n, oh, ow, o] = sum x * w (+ bias[o]); bias may be null.
void conv2d_forward(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y);
void conv2d_backward_data(const Conv2dShape& s, const float* dy, const float* w, float* dx);
// dw (HWIO) and, when dbias is not null, dbias[o] = sum of dy over n, oh, ow.
void conv2d_backward_weights(const Conv2dShape& s, const float* x, const float* dy, float* dw, float* dbias);

enum class PoolKind { max, avg };
// Pooling geometry, NHWC. Average pooling excludes padding from the divisor (TF's "SAME" behaviour).
struct Pool2dShape {
  int64_t n, h, w, c;
  int64_t kh, kw, stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  PoolKind kind;
  int64_t out_h() const { return (h + pad_top + pad_bottom - kh) / stride_h + 1; }
  int64_t out_w() const { return (w + pad_left + pad_right - kw) / stride_w + 1; }
};
// Bytes of workspace pool2d_forward writes for the backward pass (0 for average pooling).
size_t pool2d_workspace_bytes(const Pool2dShape& s);
void pool2d_forward(const Pool2dShape& s, const float* x, float* y, void* workspace);
void pool2d_backward(const Pool2dShape& s, const float* dy, const void* workspace, float* dx);

// c[b] = op(a[b]) @ op(b[b]) for each of `batch` matrices; op(a) is m x k, op(b) is k x n, c is m x n,
// all row-major and packed. a_batch_stride / b_batch_stride of 0 reuse one matrix for every batch.
struct MatmulShape {
  int64_t batch, m, n, k;
  bool transpose_a, transpose_b;
  int64_t a_batch_stride, b_batch_stride;  // elements
};
void matmul(const MatmulShape& s, const float* a, const float* b, float* c);
// The same product in bfloat16 (Keras' mixed_bfloat16 matmuls), accumulated in float32 and rounded once to nearest
// even: with oneDNN's bfloat16 kernels where the CPU has bfloat16 instructions (AVX512_BF16, AMX), else on the
// operands widened to float32. Products of bfloat16 numbers are exact in float32, so the two differ only in the order
// of the additions.
void matmul(const MatmulShape& s, const bfloat16* a, const bfloat16* b, bfloat16* c);
// Whether the bfloat16 matmul runs on oneDNN's bfloat16 kernels on this CPU (cpu_features().bfloat16_instructions).
bool has_bfloat16_matmul();

// Softmax over the last axis of a rows x cols matrix; log_softmax when `log`.
void softmax_forward(int64_t rows, int64_t cols, const float* x, float* y, bool log);
// dx from y (the forward output) and dy.
void softmax_backward(int64_t rows, int64_t cols, const float* y, const float* dy, float* dx, bool log);

enum class Eltwise { relu, tanh, sigmoid, exp, log, sqrt };
void eltwise_forward(Eltwise kind, int64_t n, const float* x, float* y);

// Number of oneDNN primitives created since start, over all threads. Plans are cached per thread (replica
// threads run the same shapes at once without sharing buffers): a second call with the same shapes on the
// same thread creates none.
int64_t primitives_created();

}  // namespace lockstep::kernels::cpu
