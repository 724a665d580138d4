// Elementwise, cast, reduction and cross-entropy loops over strided buffers (see loops.h).
#include "lockstep/kernels/cpu/loops.h"

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "lockstep/core/error.h"
#include "lockstep/core/threads.h"

namespace lockstep::kernels::cpu {

Iteration coalesce(const Iteration& in) {
  Iteration out;
  out.strides.resize(in.strides.size());
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (in.dims[d] == 1) continue;
    bool merge = !out.dims.empty();
    for (size_t k = 0; merge && k < in.strides.size(); ++k)
      merge = out.strides[k].back() == in.strides[k][d] * in.dims[d];
    if (merge) {
      out.dims.back() *= in.dims[d];
      for (size_t k = 0; k < in.strides.size(); ++k) out.strides[k].back() = in.strides[k][d];
    } else {
      out.dims.push_back(in.dims[d]);
      for (size_t k = 0; k < in.strides.size(); ++k) out.strides[k].push_back(in.strides[k][d]);
    }
  }
  if (out.dims.empty()) {  // a scalar
    out.dims.push_back(1);
    for (auto& s : out.strides) s.push_back(0);
  }
  return out;
}

namespace {

constexpr int64_t kParallelElements = int64_t{1} << 16;

// Calls row(out_offset, offsets, n, inner_strides) for every innermost row of the coalesced iteration.
template <size_t K, typename Row> void for_each_row(const Iteration& raw, Row&& row) {
  Iteration it = coalesce(raw);
  const size_t r = it.dims.size();
  const int64_t inner = it.dims[r - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= it.dims[d];
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = it.strides[k][r - 1];
  auto run = [&](int64_t i) {
    std::array<int64_t, K> off{};
    int64_t rest = i;
    for (size_t d = r - 1; d-- > 0;) {
      int64_t idx = rest % it.dims[d];
      rest /= it.dims[d];
      for (size_t k = 0; k < K; ++k) off[k] += idx * it.strides[k][d];
    }
    row(i * inner, off, inner, inner_strides);
  };
  parallel_for(rows, rows > 1 && rows * inner >= kParallelElements, run);
}

// One row of out[i] = f(a[i*sa], b[i*sb]), with the common stride patterns spelled out for vectorisation.
template <typename T, typename R, typename F>
inline void binary_row(int64_t n, const T* a, int64_t sa, const T* b, int64_t sb, R* out, F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
  }
}

template <typename T, typename R, typename F>
void binary_typed(const Iteration& it, const void* a, const void* b, void* out, F f) {
  auto* pa = static_cast<const T*>(a);
  auto* pb = static_cast<const T*>(b);
  auto* po = static_cast<R*>(out);
  for_each_row<2>(it, [&](int64_t o, const auto& off, int64_t n, const auto& s) {
    binary_row(n, pa + off[0], s[0], pb + off[1], s[1], po + o, f);
  });
}

// Computes in T over buffers of S: S is T, or bfloat16 computed in float and rounded as each element is stored (one
// pass over memory, where widening whole tensors first took three).
template <typename T, typename S = T>
void binary_dispatch(Binary op, const Iteration& it, const void* a, const void* b, void* out) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  auto arith = [&](auto f) { binary_typed<S, S>(it, a, b, out, [f](S x, S y) { return S(f(T(x), T(y))); }); };
  auto compare = [&](auto f) { binary_typed<S, bool>(it, a, b, out, [f](S x, S y) { return f(T(x), T(y)); }); };
  switch (op) {
    case Binary::add: return arith([](T x, T y) { return T(x + y); });
    case Binary::sub: return arith([](T x, T y) { return T(x - y); });
    case Binary::mul: return arith([](T x, T y) { return T(x * y); });
    case Binary::div:
      if constexpr (kFloat) return arith([](T x, T y) { return x / y; });
      break;
    case Binary::pow:
      if constexpr (kFloat) return arith([](T x, T y) { return std::pow(x, y); });
      break;
    case Binary::maximum: return arith([](T x, T y) { return x > y || x != x ? x : y; });
    case Binary::minimum: return arith([](T x, T y) { return x < y || x != x ? x : y; });
    case Binary::relu_grad: return arith([](T x, T y) { return y > T(0) ? x : T(0); });
    case Binary::equal: return compare([](T x, T y) { return x == y; });
    case Binary::not_equal: return compare([](T x, T y) { return x != y; });
    case Binary::less: return compare([](T x, T y) { return x < y; });
    case Binary::less_equal: return compare([](T x, T y) { return x <= y; });
    case Binary::greater: return compare([](T x, T y) { return x > y; });
    case Binary::greater_equal: return compare([](T x, T y) { return x >= y; });
    case Binary::logical_and: return compare([](T x, T y) { return x && y; });
    case Binary::logical_or: return compare([](T x, T y) { return x || y; });
  }
  throw InvalidArgumentError(make_message("this elementwise op needs floating-point tensors, got ",
                                          dtype_name(dtype_of<T>()), ": cast to float32 first"));
}

template <typename T> inline T sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

// f over buffers of S, computing in T (as binary_dispatch).
template <typename T, typename S, typename F> void unary_typed(const Iteration& it, const void* x, void* out, F f) {
  auto* px = static_cast<const S*>(x);
  auto* po = static_cast<S*>(out);
  for_each_row<1>(it, [&](int64_t o, const auto& off, int64_t n, const auto& s) {
    const S* xr = px + off[0];
    S* orow = po + o;
    if (s[0] == 1)
      for (int64_t i = 0; i < n; ++i) orow[i] = S(f(T(xr[i])));
    else
      for (int64_t i = 0; i < n; ++i) orow[i] = S(f(T(xr[i * s[0]])));
  });
}

template <typename T, typename S = T> void unary_dispatch(Unary op, const Iteration& it, const void* x, void* out) {
  auto run = [&](auto f) { unary_typed<T, S>(it, x, out, f); };
  if constexpr (std::is_same_v<T, bool>) {
    if (op == Unary::logical_not) return run([](bool v) { return !v; });
  } else {
    switch (op) {
      case Unary::neg: return run([](T v) { return T(-v); });
      case Unary::square: return run([](T v) { return T(v * v); });
      case Unary::abs: return run([](T v) { return v < 0 ? T(-v) : v; });
      // NaN passes through sign and relu as through TF's (relu(-0.0) is +0.0 there too).
      case Unary::sign: return run([](T v) { return v != v ? v : T((T(0) < v) - (v < T(0))); });
      case Unary::relu: return run([](T v) { return v > 0 || v != v ? v : T(0); });
      default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case Unary::exp: return run([](T v) { return std::exp(v); });
        case Unary::log: return run([](T v) { return std::log(v); });
        case Unary::sqrt: return run([](T v) { return std::sqrt(v); });
        case Unary::rsqrt: return run([](T v) { return T(1) / std::sqrt(v); });
        case Unary::sigmoid: return run([](T v) { return sigmoid(v); });
        case Unary::tanh: return run([](T v) { return std::tanh(v); });
        default: break;
      }
    }
  }
  throw InvalidArgumentError(make_message("this elementwise op does not support ", dtype_name(dtype_of<T>()),
                                          " tensors: cast to float32 first"));
}

// Calls f(T{}) for the dtypes the loops compute in (everything but bfloat16, which ops widen first).
template <typename F> void visit_compute_dtype(DType t, F&& f) {
  LS_CHECK(t != DType::bfloat16, InvalidArgumentError,
           "bfloat16 tensors are computed in float32: cast to float32 first");
  visit_dtype(t, [&](auto v) {
    if constexpr (!std::is_same_v<decltype(v), bfloat16>) f(v);
  });
}

}  // namespace

bool is_comparison(Binary op) { return op >= Binary::equal; }

void binary(Binary op, DType dtype, const Iteration& it, const void* a, const void* b, void* out) {
  if (dtype == DType::bfloat16) return binary_dispatch<float, bfloat16>(op, it, a, b, out);
  visit_compute_dtype(dtype, [&](auto v) { binary_dispatch<decltype(v)>(op, it, a, b, out); });
}

void unary(Unary op, DType dtype, const Iteration& it, const void* x, void* out) {
  if (dtype == DType::bfloat16) return unary_dispatch<float, bfloat16>(op, it, x, out);
  visit_compute_dtype(dtype, [&](auto v) { unary_dispatch<decltype(v)>(op, it, x, out); });
}

void where(DType dtype, const Iteration& it, const void* cond, const void* a, const void* b, void* out) {
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    auto* pc = static_cast<const bool*>(cond);
    auto* pa = static_cast<const T*>(a);
    auto* pb = static_cast<const T*>(b);
    auto* po = static_cast<T*>(out);
    for_each_row<3>(it, [&](int64_t o, const auto& off, int64_t n, const auto& s) {
      // Distinct buffers (restrict), and the mask read as bytes, so the selects below become vector blends.
      const uint8_t* __restrict c = reinterpret_cast<const uint8_t*>(pc + off[0]);
      const T* __restrict x = pa + off[1];
      const T* __restrict y = pb + off[2];
      T* __restrict r = po + o;
      // The shapes gradients take (a mask and a tensor against a broadcast zero, or two tensors) get loops the
      // compiler vectorises: both sides are loaded unconditionally, so the choice is a blend, not a branch
      // (relu masks are as good as random and mispredict half the time). Anything else takes the general loop.
      if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        const T yv = *y;
        for (int64_t i = 0; i < n; ++i) {
          const T xi = x[i];
          r[i] = c[i] ? xi : yv;
        }
      } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
        const T xv = *x;
        for (int64_t i = 0; i < n; ++i) {
          const T yi = y[i];
          r[i] = c[i] ? xv : yi;
        }
      } else if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          const T xi = x[i], yi = y[i];
          r[i] = c[i] ? xi : yi;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) r[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];
      }
    });
  });
}

void cast(DType from, DType to, const Iteration& it, const void* x, void* out) {
  visit_dtype(from, [&](auto vf) {
    visit_dtype(to, [&](auto vt) {
      using F = decltype(vf);
      using T = decltype(vt);
      auto* px = static_cast<const F*>(x);
      auto* po = static_cast<T*>(out);
      for_each_row<1>(it, [&](int64_t o, const auto& off, int64_t n, const auto& s) {
        // Contiguous float32 <-> bfloat16, the casts of the mixed_bfloat16 policy: a plain loop that vectorises.
        if constexpr (std::is_same_v<F, bfloat16> != std::is_same_v<T, bfloat16> &&
                      (std::is_same_v<F, float> || std::is_same_v<T, float>)) {
          if (s[0] == 1) {
            const F* __restrict src = px + off[0];
            T* __restrict dst = po + o;
            for (int64_t i = 0; i < n; ++i) dst[i] = T(static_cast<float>(src[i]));
            return;
          }
        }
        for (int64_t i = 0; i < n; ++i) {
          const F v = px[off[0] + i * s[0]];
          if constexpr (std::is_same_v<T, bool>) {
            po[o + i] = static_cast<double>(static_cast<float>(v)) != 0.0;
          } else if constexpr (std::is_same_v<F, bfloat16> || std::is_same_v<T, bfloat16>) {
            po[o + i] = T(static_cast<float>(v));
          } else {
            po[o + i] = static_cast<T>(v);
          }
        }
      });
    });
  });
}

void reduce(Reduce op, DType dtype, const Iteration& it, const std::vector<int64_t>& out_strides, const void* x,
            void* out, int64_t out_numel) {
  visit_compute_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    // Floats accumulate in double and integers in int64 (exact for max/min, steadier for sums).
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    Acc init = op == Reduce::sum || op == Reduce::sum_of_squares ? Acc(0)
               : op == Reduce::max ? std::numeric_limits<Acc>::lowest()
                                   : std::numeric_limits<Acc>::max();
    if constexpr (std::is_floating_point_v<Acc>) {
      if (op == Reduce::max) init = -std::numeric_limits<Acc>::infinity();
      if (op == Reduce::min) init = std::numeric_limits<Acc>::infinity();
    }
    std::vector<Acc> acc(static_cast<size_t>(out_numel), init);
    auto* px = static_cast<const T*>(x);
    const bool squares = op == Reduce::sum_of_squares;
    auto term = [&](int64_t at) {
      const T v = px[at];
      if constexpr (std::is_floating_point_v<T>) return static_cast<Acc>(static_cast<T>(v * v));
      else return static_cast<Acc>(v) * static_cast<Acc>(v);
    };
    Iteration both{it.dims, {it.strides[0], out_strides}};
    // Sequential on purpose: the order of additions is fixed, so results are bitwise reproducible.
    Iteration c = coalesce(both);
    const size_t r = c.dims.size();
    const int64_t inner = c.dims[r - 1];
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < r; ++d) rows *= c.dims[d];
    for (int64_t row = 0; row < rows; ++row) {
      int64_t xo = 0, oo = 0, rest = row;
      for (size_t d = r - 1; d-- > 0;) {
        int64_t idx = rest % c.dims[d];
        rest /= c.dims[d];
        xo += idx * c.strides[0][d];
        oo += idx * c.strides[1][d];
      }
      const int64_t sx = c.strides[0][r - 1], so = c.strides[1][r - 1];
      if ((op == Reduce::sum || squares) && so == 0) {
        // The row sums into one element: eight partial sums in a fixed pattern (still bitwise reproducible) rather
        // than one chain of dependent additions, which ran at one element per add latency (5 ms for a Dense kernel's
        // L2 penalty of 2.8M weights). A contiguous row is its own case, so that the loop vectorises.
        auto row_sum = [&](auto step, auto square) {
          std::array<Acc, 8> part{};
          auto add = [&](Acc& to, int64_t i) {
            if constexpr (square()) to += term(xo + i * step);
            else to += static_cast<Acc>(px[xo + i * step]);
          };
          int64_t i = 0;
          for (; i + 8 <= inner; i += 8)
            for (int k = 0; k < 8; ++k) add(part[static_cast<size_t>(k)], i + k);
          for (; i < inner; ++i) add(part[0], i);
          return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        };
        using One = std::integral_constant<int64_t, 1>;
        using Yes = std::true_type;
        using No = std::false_type;
        acc[static_cast<size_t>(oo)] += sx == 1 ? (squares ? row_sum(One(), Yes()) : row_sum(One(), No()))
                                                : (squares ? row_sum(sx, Yes()) : row_sum(sx, No()));
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        Acc& a = acc[static_cast<size_t>(oo + i * so)];
        const Acc val = static_cast<Acc>(px[xo + i * sx]);
        if (op == Reduce::sum) a += val;
        else if (squares) a += term(xo + i * sx);
        else if (op == Reduce::max) a = (val > a || val != val) ? val : a;
        else a = (val < a || val != val) ? val : a;
      }
    }
    auto* po = static_cast<T*>(out);
    for (int64_t i = 0; i < out_numel; ++i) po[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
  });
}

void argmax(DType dtype, int64_t outer, int64_t n, int64_t inner, const void* x, int64_t* out) {
  visit_compute_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    auto* px = static_cast<const T*>(x);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        const T* p = px + o * n * inner + j;
        // TF's (Eigen's) scan: from the lowest finite value at index 0, move to each greater element, so NaN is
        // never chosen and a row of only NaN and -Inf gives 0.
        int64_t best = 0;
        T top = std::numeric_limits<T>::lowest();
        for (int64_t i = 0; i < n; ++i)
          if (p[i * inner] > top) {
            top = p[i * inner];
            best = i;
          }
        out[o * inner + j] = best;
      }
  });
}

template <typename T, typename L>
void sparse_softmax_xent_forward(int64_t n, int64_t c, const T* logits, const L* labels, T* loss, T* probs) {
  for (int64_t i = 0; i < n; ++i) {
    const L label = labels[i];
    LS_CHECK(label >= 0 && label < c, InvalidArgumentError, "label ", static_cast<int64_t>(label), " of example ",
             i, " is outside the valid range [0, ", c, ") for ", c, " classes");
    const T* z = logits + i * c;
    T* p = probs + i * c;
    T m = z[0];
    for (int64_t j = 1; j < c; ++j) m = std::max(m, z[j]);
    double total = 0;
    for (int64_t j = 0; j < c; ++j) {
      p[j] = std::exp(z[j] - m);
      total += p[j];
    }
    const T inv = T(1.0 / total);
    for (int64_t j = 0; j < c; ++j) p[j] *= inv;
    loss[i] = T(std::log(total) - static_cast<double>(z[label] - m));
  }
}

template <typename T, typename L>
void sparse_softmax_xent_backward(int64_t n, int64_t c, const T* probs, const L* labels, const T* dloss, T* dlogits) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) dlogits[i * c + j] = probs[i * c + j] * dloss[i];
    dlogits[i * c + labels[i]] -= dloss[i];
  }
}

template void sparse_softmax_xent_forward(int64_t, int64_t, const float*, const int32_t*, float*, float*);
template void sparse_softmax_xent_forward(int64_t, int64_t, const float*, const int64_t*, float*, float*);
template void sparse_softmax_xent_forward(int64_t, int64_t, const double*, const int32_t*, double*, double*);
template void sparse_softmax_xent_forward(int64_t, int64_t, const double*, const int64_t*, double*, double*);
template void sparse_softmax_xent_backward(int64_t, int64_t, const float*, const int32_t*, const float*, float*);
template void sparse_softmax_xent_backward(int64_t, int64_t, const float*, const int64_t*, const float*, float*);
template void sparse_softmax_xent_backward(int64_t, int64_t, const double*, const int32_t*, const double*, double*);
template void sparse_softmax_xent_backward(int64_t, int64_t, const double*, const int64_t*, const double*, double*);

}  // namespace lockstep::kernels::cpu
