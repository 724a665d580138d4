// Naive reference kernels: the textbook loops for convolution, pooling, matmul and softmax, instantiated for
// float and double. Slow on purpose; they are the ground truth the oneDNN kernels are tested against.
#include "lockstep/kernels/cpu/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace lockstep::kernels::ref {
namespace {

// Index of element (a, b, c, d) in a packed 4-D array of dims (*, B, C, D): NHWC activations, HWIO filters.
inline int64_t at(int64_t a, int64_t b, int64_t c, int64_t d, int64_t nb, int64_t nc, int64_t nd) {
  return ((a * nb + b) * nc + c) * nd + d;
}

// Calls f(oh, ow, ih, iw, i, j) for every output position and every filter tap that lands inside the input.
template <typename Shape, typename F> void for_each_tap(const Shape& s, F f) {
  for (int64_t oh = 0; oh < s.out_h(); ++oh)
    for (int64_t ow = 0; ow < s.out_w(); ++ow)
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          const int64_t ih = oh * s.stride_h - s.pad_top + i;
          const int64_t iw = ow * s.stride_w - s.pad_left + j;
          if (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w) f(oh, ow, ih, iw, i, j);
        }
}

// Visits every pooling window: f(out, taps) with `out` the output offset and `taps` the offsets
// of the window's inputs inside the image, in row-major order (so the first maximum among them is TF's).
template <typename F> void for_each_window(const Pool2dShape& s, F f) {
  std::vector<int64_t> taps;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oh = 0; oh < s.out_h(); ++oh)
      for (int64_t ow = 0; ow < s.out_w(); ++ow)
        for (int64_t c = 0; c < s.c; ++c) {
          taps.clear();
          for (int64_t i = 0; i < s.kh; ++i)
            for (int64_t j = 0; j < s.kw; ++j) {
              const int64_t ih = oh * s.stride_h - s.pad_top + i;
              const int64_t iw = ow * s.stride_w - s.pad_left + j;
              if (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w) taps.push_back(at(n, ih, iw, c, s.h, s.w, s.c));
            }
          f(at(n, oh, ow, c, s.out_h(), s.out_w(), s.c), taps);
        }
}

// TF's max pooling ignores NaN: the largest input above the lowest finite value, or that value when there is none
// (a window of NaN and -Inf).
template <typename T> T window_max(const T* x, const std::vector<int64_t>& taps) {
  T top = std::numeric_limits<T>::lowest();
  for (int64_t t : taps)
    if (x[t] > top) top = x[t];
  return top;
}

// The input TF's max-pooling gradient goes to: the first tap, then each one greater than the last chosen. It is the
// forward's maximum, except in a window that starts with NaN, whose gradient goes to the NaN.
template <typename T> int64_t first_max(const T* x, const std::vector<int64_t>& taps) {
  int64_t best = taps.front();
  for (int64_t t : taps)
    if (x[t] > x[best]) best = t;
  return best;
}

}  // namespace

template <typename T> void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const int64_t oh_n = s.out_h(), ow_n = s.out_w();
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t p = 0; p < oh_n * ow_n; ++p)
      for (int64_t o = 0; o < s.o; ++o) y[n * oh_n * ow_n * s.o + p * s.o + o] = bias ? bias[o] : T(0);
    for_each_tap(s, [&](int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t i, int64_t j) {
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t o = 0; o < s.o; ++o)
          y[at(n, oh, ow, o, oh_n, ow_n, s.o)] +=
              x[at(n, ih, iw, c, s.h, s.w, s.c)] * w[at(i, j, c, o, s.kw, s.c, s.o)];
    });
  }
}

template <typename T> void conv2d_backward_data(const Conv2dShape& s, const T* dy, const T* w, T* dx) {
  std::fill(dx, dx + s.n * s.h * s.w * s.c, T(0));
  for (int64_t n = 0; n < s.n; ++n)
    for_each_tap(s, [&](int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t i, int64_t j) {
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t o = 0; o < s.o; ++o)
          dx[at(n, ih, iw, c, s.h, s.w, s.c)] +=
              dy[at(n, oh, ow, o, s.out_h(), s.out_w(), s.o)] * w[at(i, j, c, o, s.kw, s.c, s.o)];
    });
}

template <typename T> void conv2d_backward_weights(const Conv2dShape& s, const T* x, const T* dy, T* dw, T* dbias) {
  std::fill(dw, dw + s.kh * s.kw * s.c * s.o, T(0));
  for (int64_t n = 0; n < s.n; ++n)
    for_each_tap(s, [&](int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t i, int64_t j) {
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t o = 0; o < s.o; ++o)
          dw[at(i, j, c, o, s.kw, s.c, s.o)] +=
              x[at(n, ih, iw, c, s.h, s.w, s.c)] * dy[at(n, oh, ow, o, s.out_h(), s.out_w(), s.o)];
    });
  if (dbias == nullptr) return;
  std::fill(dbias, dbias + s.o, T(0));
  const int64_t positions = s.n * s.out_h() * s.out_w();
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t o = 0; o < s.o; ++o) dbias[o] += dy[p * s.o + o];
}

template <typename T> void pool2d_forward(const Pool2dShape& s, const T* x, T* y) {
  for_each_window(s, [&](int64_t out, const std::vector<int64_t>& taps) {
    if (s.kind == cpu::PoolKind::max) {
      y[out] = window_max(x, taps);
    } else {
      T sum = 0;
      for (int64_t t : taps) sum += x[t];
      y[out] = sum / T(taps.size());
    }
  });
}

template <typename T> void pool2d_backward(const Pool2dShape& s, const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + s.n * s.h * s.w * s.c, T(0));
  for_each_window(s, [&](int64_t out, const std::vector<int64_t>& taps) {
    if (s.kind == cpu::PoolKind::max) {
      dx[first_max(x, taps)] += dy[out];
    } else {
      for (int64_t t : taps) dx[t] += dy[out] / T(taps.size());
    }
  });
}

template <typename T> void matmul(const MatmulShape& s, const T* a, const T* b, T* c) {
  for (int64_t batch = 0; batch < s.batch; ++batch) {
    const T* ab = a + batch * s.a_batch_stride;
    const T* bb = b + batch * s.b_batch_stride;
    T* cb = c + batch * s.m * s.n;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        T sum = 0;
        for (int64_t p = 0; p < s.k; ++p)
          sum +=
              (s.transpose_a ? ab[p * s.m + i] : ab[i * s.k + p]) * (s.transpose_b ? bb[j * s.k + p] : bb[p * s.n + j]);
        cb[i * s.n + j] = sum;
      }
  }
}

template <typename T> void softmax_forward(int64_t rows, int64_t cols, const T* x, T* y, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T max = *std::max_element(xr, xr + cols);  // subtracted so exp cannot overflow
    T sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += std::exp(xr[i] - max);
    for (int64_t i = 0; i < cols; ++i) yr[i] = log ? xr[i] - max - std::log(sum) : std::exp(xr[i] - max) / sum;
  }
}

template <typename T> void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    // softmax: dx = y * (dy - sum(dy * y)); log-softmax: dx = dy - softmax * sum(dy), softmax = exp(y).
    T sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += log ? dyr[i] : dyr[i] * yr[i];
    for (int64_t i = 0; i < cols; ++i) dxr[i] = log ? dyr[i] - std::exp(yr[i]) * sum : yr[i] * (dyr[i] - sum);
  }
}

#define LOCKSTEP_INSTANTIATE_REF(T)                                                         \
  template void conv2d_forward<T>(const Conv2dShape&, const T*, const T*, const T*, T*);    \
  template void conv2d_backward_data<T>(const Conv2dShape&, const T*, const T*, T*);        \
  template void conv2d_backward_weights<T>(const Conv2dShape&, const T*, const T*, T*, T*); \
  template void pool2d_forward<T>(const Pool2dShape&, const T*, T*);                        \
  template void pool2d_backward<T>(const Pool2dShape&, const T*, const T*, T*);             \
  template void matmul<T>(const MatmulShape&, const T*, const T*, T*);                      \
  template void softmax_forward<T>(int64_t, int64_t, const T*, T*, bool);                   \
  template void softmax_backward<T>(int64_t, int64_t, const T*, const T*, T*, bool);
LOCKSTEP_INSTANTIATE_REF(float)
LOCKSTEP_INSTANTIATE_REF(double)
#undef LOCKSTEP_INSTANTIATE_REF

}  // namespace lockstep::kernels::ref
