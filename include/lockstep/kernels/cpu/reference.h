// Naive reference kernels: the obvious loops, for float and double, used by tests as ground truth and by
// the float64 path of the ops (finite-difference checks). Same shapes and names as kernels.h.
#pragma once
#include <cstdint>

#include "lockstep/kernels/cpu/kernels.h"

namespace lockstep::kernels::ref {

using cpu::Conv2dShape;
using cpu::MatmulShape;
using cpu::Pool2dShape;

template <typename T> void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y);
template <typename T> void conv2d_backward_data(const Conv2dShape& s, const T* dy, const T* w, T* dx);
template <typename T>
void conv2d_backward_weights(const Conv2dShape& s, const T* x, const T* dy, T* dw, T* dbias);

// Backward recomputes the max positions from x (first maximum in the window wins, as in TF).
template <typename T> void pool2d_forward(const Pool2dShape& s, const T* x, T* y);
template <typename T> void pool2d_backward(const Pool2dShape& s, const T* x, const T* dy, T* dx);

template <typename T> void matmul(const MatmulShape& s, const T* a, const T* b, T* c);

template <typename T> void softmax_forward(int64_t rows, int64_t cols, const T* x, T* y, bool log);
template <typename T>
void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx, bool log);

}  // namespace lockstep::kernels::ref
