// Elementwise ops, casts, fills, strided copies, reductions, argmax and the optimizers' updates on the GPU, computing
// what cpu::binary/unary/where/cast/reduce/argmax and keras/optimizers.cc compute, operation for operation.
// Operands reach a kernel as a Layout (dims and strides by value, adjacent axes merged as the CPU loops merge them),
// so the common contiguous or broadcast-scalar case is one axis and a plain index. Reductions never use atomics: a
// fixed-order tree over a block, and partial results over chunks added in chunk order, with block shapes and chunks
// chosen from the shapes alone, so results are the same bit for bit on every run. Arithmetic that the CPU rounds step
// by step goes through __fmul_rn and friends, which are never fused into multiply-adds whatever --fmad says.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "lockstep/kernels/cuda/kernels.h"
#include "runtime-impl.h"

namespace lockstep::kernels::cuda {

// ---- device arithmetic and element types ----

namespace {

constexpr unsigned kThreads = 256;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int64_t kInt64Lowest = std::numeric_limits<int64_t>::lowest();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Round-to-nearest arithmetic that the compiler never contracts into a fused multiply-add, and division and square
// root that are IEEE whatever -prec-div and -prec-sqrt say: the CPU rounds every step.
namespace rn {
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float sqrt(float a) { return __fsqrt_rn(a); }
__device__ inline double sqrt(double a) { return __dsqrt_rn(a); }
}  // namespace rn

// CUDA's float exp, log, pow and tanh can be 1 to 4 ulp off, where glibc's (the CPU's) are nearly always correctly
// rounded: evaluated in double and rounded once, float results match the CPU's in all but rare cases.
__device__ inline float exp_of(float v) { return static_cast<float>(exp(static_cast<double>(v))); }
__device__ inline double exp_of(double v) { return exp(v); }
__device__ inline float log_of(float v) { return static_cast<float>(log(static_cast<double>(v))); }
__device__ inline double log_of(double v) { return log(v); }
__device__ inline float tanh_of(float v) { return static_cast<float>(tanh(static_cast<double>(v))); }
__device__ inline double tanh_of(double v) { return tanh(v); }
__device__ inline float pow_of(float x, float y) {
  return static_cast<float>(pow(static_cast<double>(x), static_cast<double>(y)));
}
__device__ inline double pow_of(double x, double y) { return pow(x, y); }

template <typename T> __host__ __device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// lockstep::bfloat16 on the device: the same bits and the same conversions (round to nearest even, NaN kept quiet).
struct Bf16 {
  uint16_t bits;
  Bf16() = default;
  __device__ explicit Bf16(float f) {
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    else bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __device__ explicit operator float() const { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }
};

// The type an op computes in for elements stored as S: bfloat16 is computed in float32.
template <typename S> using Compute = std::conditional_t<std::is_same_v<S, Bf16>, float, S>;

// static_cast from floating point to an integer as the CPU's x86 build computes it (cvttss2si, cvttsd2si): truncation
// toward zero, the lowest integer for NaN and for values out of range, and uint8 as the low byte of the int32
// conversion. CUDA's own conversions saturate instead.
template <typename I> __device__ I truncate_like_x86(double v) {
  if constexpr (sizeof(I) == 8) {
    return v >= -0x1p63 && v < 0x1p63 ? static_cast<int64_t>(v) : INT64_MIN;
  } else {
    const int32_t r = v > -0x1p31 - 1 && v < 0x1p31 ? static_cast<int32_t>(v) : INT32_MIN;
    return static_cast<I>(r);
  }
}

// One element of cpu::cast: to bool through float (a double too small for float is false, as on the CPU), to or from
// bfloat16 through float.
template <typename To, typename From> __device__ To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (std::is_same_v<From, Bf16> || std::is_same_v<To, Bf16>) {
    const float f = static_cast<float>(v);
    if constexpr (std::is_same_v<To, Bf16>) return Bf16(f);
    else return convert<To>(f);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return truncate_like_x86<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Calls f(S{}) with S the device storage type of `t`.
template <typename F> void visit_storage(DType t, F&& f) {
  switch (t) {
    case DType::float32: return f(float{});
    case DType::bfloat16: return f(Bf16{});
    case DType::float64: return f(double{});
    case DType::int64: return f(int64_t{});
    case DType::int32: return f(int32_t{});
    case DType::uint8: return f(uint8_t{});
    case DType::bool_: return f(bool{});
  }
}

// Calls f(U{}) with U the unsigned integer of `esize` bytes, for ops that only move elements.
template <typename F> void visit_unsigned(size_t esize, const char* op, F&& f) {
  switch (esize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default:
      throw InvalidArgumentError(
          make_message(op, ": elements of ", esize, " bytes are not supported; expected 1, 2, 4 or 8 bytes"));
  }
}

}  // namespace

// ---- layouts and launches ----

namespace {

constexpr int kMaxRank = 8;

// dims and K operands' element strides over them, passed to kernels by value.
template <int K> struct Layout {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[K][kMaxRank] = {};
};

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The coalesced layout of K operands over it.dims; throws when the operands do not match the dims or when more than
// kMaxRank axes remain.
template <int K> Layout<K> layout_of(const Iteration& it, const char* op) {
  LS_CHECK(it.strides.size() == K, InvalidArgumentError, op, ": got strides for ", it.strides.size(),
           " operands, expected ", K);
  for (const auto& s : it.strides)
    LS_CHECK(s.size() == it.dims.size(), InvalidArgumentError, op, ": an operand has ", s.size(),
             " strides for ", it.dims.size(), " dimensions");
  const Iteration c = cpu::coalesce(it);
  const int rank = static_cast<int>(c.dims.size());
  LS_CHECK(rank <= kMaxRank, InvalidArgumentError, op, ": the operands have ", rank,
           " axes after merging contiguous ones; the GPU kernels take at most ", kMaxRank,
           ": make the operands contiguous first");
  Layout<K> l;
  l.rank = rank;
  for (int d = 0; d < rank; ++d) {
    l.dims[d] = c.dims[static_cast<size_t>(d)];
    for (int k = 0; k < K; ++k) l.strides[k][d] = c.strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
  }
  return l;
}

// Each operand's element offset at flat index i of l.dims. One axis (the contiguous and scalar cases) needs no
// division; the loop is unrolled so that the layout stays in parameter space.
template <int K> __device__ inline void locate(const Layout<K>& l, int64_t i, int64_t (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d > 0; --d) {
    if (d >= l.rank) continue;
    const int64_t q = i / l.dims[d];
    const int64_t at = i - q * l.dims[d];
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += at * l.strides[k][d];
    i = q;
  }
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] += i * l.strides[k][0];
}

// Grid-stride loops with 64-bit indices: for (i = thread_index(); i < n; i += thread_count()).
__device__ inline int64_t thread_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Launches a grid-stride kernel over n elements on the current device's stream.
template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), int64_t n, Args... args) {
  kernel<<<detail::blocks_for(n, kThreads), kThreads, 0, detail::stream()>>>(args...);
  detail::check_launch(name);
}

}  // namespace

// ---- elementwise: binary, unary, where ----

namespace {

const char* binary_name(Binary op) {
  static constexpr const char* kNames[] = {
      "add",   "sub",       "mul",  "div",        "pow",     "maximum",       "minimum",     "relu_grad",
      "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or"};
  return kNames[static_cast<int>(op)];
}

const char* unary_name(Unary op) {
  static constexpr const char* kNames[] = {
      "neg", "exp", "log", "sqrt", "rsqrt", "square", "abs", "sign", "relu", "sigmoid", "tanh", "logical_not"};
  return kNames[static_cast<int>(op)];
}

// The ops that cpu::binary and cpu::unary accept for `t` (the rest throw there, and here before any launch).
bool binary_supports(Binary op, DType t) { return (op != Binary::div && op != Binary::pow) || is_floating(t); }

bool unary_supports(Unary op, DType t) {
  if (t == DType::bool_) return op == Unary::logical_not;
  switch (op) {
    case Unary::neg:
    case Unary::square:
    case Unary::abs:
    case Unary::sign:
    case Unary::relu: return true;
    case Unary::logical_not: return false;
    default: return is_floating(t);
  }
}

// a op b for the arithmetic ops, as cpu::binary's lambdas.
template <typename T> __device__ T arithmetic(Binary op, T x, T y) {
  switch (op) {
    case Binary::add: return T(x + y);
    case Binary::sub: return T(x - y);
    case Binary::mul: return T(x * y);
    case Binary::div:
      if constexpr (std::is_floating_point_v<T>) return rn::div(x, y);
      break;
    case Binary::pow:
      if constexpr (std::is_floating_point_v<T>) return pow_of(x, y);
      break;
    case Binary::maximum: return x > y || is_nan(x) ? x : y;
    case Binary::minimum: return x < y || is_nan(x) ? x : y;
    case Binary::relu_grad: return y > T(0) ? x : T(0);
    default: break;
  }
  return T(0);  // comparisons go to comparison(); the host refuses div and pow on integers
}

// a op b for the comparisons and logical ops.
template <typename T> __device__ bool comparison(Binary op, T x, T y) {
  switch (op) {
    case Binary::equal: return x == y;
    case Binary::not_equal: return x != y;
    case Binary::less: return x < y;
    case Binary::less_equal: return x <= y;
    case Binary::greater: return x > y;
    case Binary::greater_equal: return x >= y;
    case Binary::logical_and: return x && y;
    case Binary::logical_or: return x || y;
    default: return false;
  }
}

template <typename T> __device__ T sigmoid_of(T v) {
  if (v >= T(0)) return rn::div(T(1), T(1) + exp_of(-v));
  const T e = exp_of(v);
  return rn::div(e, T(1) + e);
}

// v < 0, without a comparison of an unsigned integer with zero that the compiler warns about.
template <typename T> __device__ bool is_negative(T v) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return v < T(0);
}

// op(v), as cpu::unary's lambdas (abs keeps -0.0, sign and relu map NaN to 0).
template <typename T> __device__ T unary_value(Unary op, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return !v;  // logical_not, the one op on bool
  } else {
    switch (op) {
      case Unary::neg: return T(-v);
      case Unary::square: return T(v * v);
      case Unary::abs: return is_negative(v) ? T(-v) : v;
      case Unary::sign: return T((T(0) < v) - is_negative(v));
      case Unary::relu: return v > T(0) ? v : T(0);
      default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case Unary::exp: return exp_of(v);
        case Unary::log: return log_of(v);
        case Unary::sqrt: return rn::sqrt(v);
        case Unary::rsqrt: return rn::div(T(1), rn::sqrt(v));
        case Unary::sigmoid: return sigmoid_of(v);
        case Unary::tanh: return tanh_of(v);
        default: break;
      }
    }
    return v;  // the host refuses the rest
  }
}

// Elements stored as S, computed in T = Compute<S>; out is bool for comparisons, S otherwise.
template <typename S, bool kCompare>
__global__ void binary_kernel(Binary op, Layout<2> l, int64_t n, const S* a, const S* b,
                              std::conditional_t<kCompare, bool, S>* out) {
  using T = Compute<S>;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t off[2];
    locate(l, i, off);
    const T x = T(a[off[0]]), y = T(b[off[1]]);
    if constexpr (kCompare) out[i] = comparison(op, x, y);
    else out[i] = S(arithmetic(op, x, y));
  }
}

template <typename S> __global__ void unary_kernel(Unary op, Layout<1> l, int64_t n, const S* x, S* out) {
  using T = Compute<S>;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t off[1];
    locate(l, i, off);
    out[i] = S(unary_value(op, T(x[off[0]])));
  }
}

// Selects whole elements, so any dtype moves as the unsigned integer of its size.
template <typename U>
__global__ void where_kernel(Layout<3> l, int64_t n, const uint8_t* cond, const U* a, const U* b, U* out) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t off[3];
    locate(l, i, off);
    out[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

}  // namespace

void binary(Binary op, DType dtype, const Iteration& it, const void* a, const void* b, void* out) {
  LS_CHECK(binary_supports(op, dtype), InvalidArgumentError, "elementwise op ", binary_name(op),
           " needs floating-point tensors, got ", dtype_name(dtype), ": cast to float32 first");
  const int64_t n = count(it.dims);
  if (n == 0) return;
  const Layout<2> l = layout_of<2>(it, "binary");
  visit_storage(dtype, [&](auto v) {
    using S = decltype(v);
    const auto* pa = static_cast<const S*>(a);
    const auto* pb = static_cast<const S*>(b);
    if (cpu::is_comparison(op))
      launch("binary_kernel", binary_kernel<S, true>, n, op, l, n, pa, pb, static_cast<bool*>(out));
    else
      launch("binary_kernel", binary_kernel<S, false>, n, op, l, n, pa, pb, static_cast<S*>(out));
  });
}

void unary(Unary op, DType dtype, const Iteration& it, const void* x, void* out) {
  LS_CHECK(unary_supports(op, dtype), InvalidArgumentError, "elementwise op ", unary_name(op),
           " does not support ", dtype_name(dtype), " tensors: cast to float32 first");
  const int64_t n = count(it.dims);
  if (n == 0) return;
  const Layout<1> l = layout_of<1>(it, "unary");
  visit_storage(dtype, [&](auto v) {
    using S = decltype(v);
    launch("unary_kernel", unary_kernel<S>, n, op, l, n, static_cast<const S*>(x), static_cast<S*>(out));
  });
}

void where(DType dtype, const Iteration& it, const void* cond, const void* a, const void* b, void* out) {
  const int64_t n = count(it.dims);
  if (n == 0) return;
  const Layout<3> l = layout_of<3>(it, "where");
  visit_unsigned(dtype_size(dtype), "where", [&](auto v) {
    using U = decltype(v);
    launch("where_kernel", where_kernel<U>, n, l, n, static_cast<const uint8_t*>(cond), static_cast<const U*>(a),
           static_cast<const U*>(b), static_cast<U*>(out));
  });
}

// ---- casts, fills and strided copies ----

namespace {

template <typename From, typename To>
__global__ void cast_kernel(Layout<1> l, int64_t n, const From* x, To* out) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t off[1];
    locate(l, i, off);
    out[i] = convert<To>(x[off[0]]);
  }
}

template <typename U> __global__ void fill_kernel(int64_t n, U value, U* out) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) out[i] = value;
}

template <typename U> __global__ void copy_kernel(Layout<2> l, int64_t n, const U* src, U* dst) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t off[2];
    locate(l, i, off);
    dst[off[1]] = src[off[0]];
  }
}

// out[0, n) = the element of `esize` bytes at `value` (host memory).
void fill_element(size_t esize, const void* value, int64_t n, void* out) {
  if (n <= 0) return;
  visit_unsigned(esize, "fill", [&](auto v) {
    using U = decltype(v);
    U bits;
    std::memcpy(&bits, value, sizeof bits);
    launch("fill_kernel", fill_kernel<U>, n, n, bits, static_cast<U*>(out));
  });
}

}  // namespace

void cast(DType from, DType to, const Iteration& it, const void* x, void* out) {
  const int64_t n = count(it.dims);
  if (n == 0) return;
  const Layout<1> l = layout_of<1>(it, "cast");
  visit_storage(from, [&](auto vf) {
    visit_storage(to, [&](auto vt) {
      using From = decltype(vf);
      using To = decltype(vt);
      launch("cast_kernel", cast_kernel<From, To>, n, l, n, static_cast<const From*>(x), static_cast<To*>(out));
    });
  });
}

void fill(DType dtype, int64_t n, double value, void* out) {
  // The element is converted on the host exactly as the CPU's full() converts it.
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T x;
    if constexpr (std::is_same_v<T, bfloat16>) x = bfloat16(static_cast<float>(value));
    else x = static_cast<T>(value);
    fill_element(sizeof x, &x, n, out);
  });
}

void copy_strided(size_t esize, const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                  const void* src, const std::vector<int64_t>& dst_strides, void* dst) {
  const int64_t n = count(dims);
  if (n == 0) return;
  const Layout<2> l = layout_of<2>(Iteration{dims, {src_strides, dst_strides}}, "copy_strided");
  visit_unsigned(esize, "copy_strided", [&](auto v) {
    using U = decltype(v);
    launch("copy_kernel", copy_kernel<U>, n, l, n, static_cast<const U*>(src), static_cast<U*>(dst));
  });
}

// ---- reductions ----

namespace {

const char* reduce_name(Reduce op) {
  static constexpr const char* kNames[] = {"sum", "max", "min", "sum_of_squares"};
  return kNames[static_cast<int>(op)];
}

// What cpu::reduce accumulates T in: double for floating point, int64 for integers and bool.
template <typename T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// A reduction as a fold: each thread folds take(element, index) into init() with combine(), partial results are
// combined in a fixed tree, and finish() gives the output element.

// sum, and sum_of_squares with each x * x rounded in T before it is added (never fused into the addition).
template <typename T, bool kSquares> struct Sum {
  using Partial = Acc<T>;
  __host__ __device__ static Partial init() { return Partial(0); }
  __device__ static Partial take(T v, int64_t) {
    if constexpr (!kSquares) return static_cast<Partial>(v);
    else if constexpr (std::is_floating_point_v<T>) return static_cast<Partial>(rn::mul(v, v));
    else return static_cast<Partial>(v) * static_cast<Partial>(v);
  }
  __host__ __device__ static Partial combine(Partial a, Partial b) { return a + b; }
  __host__ __device__ static T finish(Partial p) { return static_cast<T>(p); }
};

// max (kMax) or min. The CPU scans in order and keeps the first of values that compare equal (0.0 and -0.0) and the
// last NaN; carrying each candidate's index makes the tree pick the same element whatever the grouping.
template <typename T, bool kMax> struct Extreme {
  struct Partial {
    Acc<T> v;
    int64_t at;
  };
  __host__ __device__ static Partial init() {
    if constexpr (std::is_floating_point_v<T>) return {kMax ? -kInfinity : kInfinity, kInt64Max};
    else return {kMax ? kInt64Lowest : kInt64Max, kInt64Max};
  }
  __device__ static Partial take(T v, int64_t at) { return {static_cast<Acc<T>>(v), at}; }
  __host__ __device__ static Partial combine(Partial p, Partial q) {
    const bool p_nan = is_nan(p.v), q_nan = is_nan(q.v);
    if (p_nan || q_nan) return p_nan && (!q_nan || p.at > q.at) ? p : q;
    if (kMax ? q.v > p.v : q.v < p.v) return q;
    if (kMax ? p.v > q.v : p.v < q.v) return p;
    return p.at <= q.at ? p : q;
  }
  __host__ __device__ static T finish(Partial p) { return static_cast<T>(p.v); }
};

// x's axes split into those kept in the output and those reduced, each coalesced; and how the work is cut.
// A flat kept index j and a flat reduced index r address x at kept offset + reduced offset, and out at j's out offset.
struct ReducePlan {
  Layout<2> kept;     // x's strides and out's strides over the kept axes
  Layout<1> reduced;  // x's strides over the reduced axes
  int64_t kept_count = 1, reduced_count = 1;
  unsigned threads_x = 1, threads_y = 1;  // threads per block along kept and along reduced indices
  int64_t splits = 1, chunk = 1;          // the reduced range is cut into `splits` chunks of `chunk` indices
};

// Short reductions (under kShortReduction elements) get a thread per output. Longer ones get a block per output
// when the reduced elements are contiguous, else a block per 32 outputs with 8 threads along the reduction, so a warp
// reads consecutive addresses. When that leaves fewer than kTargetBlocks blocks, the reduced range is cut into
// chunks of at least kMinPerThread elements per thread, whose partial results a second pass combines in chunk order.
// All of it depends on the shapes alone, never on the device, so the order of additions is fixed.
constexpr int64_t kShortReduction = 16;
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kMinPerThread = 32;
constexpr int64_t kMaxSplits = 65535;  // the grid's y extent
constexpr int64_t kMaxGroupBlocks = 65535;

ReducePlan plan_reduce(const Iteration& it, const std::vector<int64_t>& out_strides) {
  LS_CHECK(it.strides.size() == 1, InvalidArgumentError, "reduce: got strides for ", it.strides.size(),
           " operands, expected 1");
  LS_CHECK(out_strides.size() == it.dims.size() && it.strides[0].size() == it.dims.size(), InvalidArgumentError,
           "reduce: x has ", it.strides[0].size(), " strides and out ", out_strides.size(), " for ", it.dims.size(),
           " dimensions");
  const Iteration both = cpu::coalesce(Iteration{it.dims, {it.strides[0], out_strides}});
  Iteration kept{{}, {{}, {}}}, reduced{{}, {{}}};
  for (size_t d = 0; d < both.dims.size(); ++d) {
    Iteration& part = both.strides[1][d] == 0 ? reduced : kept;
    part.dims.push_back(both.dims[d]);
    for (size_t k = 0; k < part.strides.size(); ++k) part.strides[k].push_back(both.strides[k][d]);
  }
  ReducePlan p;
  p.kept = layout_of<2>(kept, "reduce");
  p.reduced = layout_of<1>(reduced, "reduce");
  p.kept_count = count(kept.dims);
  p.reduced_count = count(reduced.dims);
  const bool reduced_contiguous = p.reduced.strides[0][p.reduced.rank - 1] == 1;
  if (p.reduced_count < kShortReduction) {
    p.threads_x = kThreads;
  } else if (reduced_contiguous) {
    p.threads_y = kThreads;
  } else {
    p.threads_x = 32;
    p.threads_y = kThreads / 32;
  }
  const int64_t groups = ceil_div(p.kept_count, p.threads_x);
  if (groups < kTargetBlocks)
    p.splits = std::min(ceil_div(kTargetBlocks, groups), ceil_div(p.reduced_count, p.threads_y * kMinPerThread));
  p.splits = std::clamp<int64_t>(p.splits, 1, kMaxSplits);
  p.chunk = ceil_div(p.reduced_count, p.splits);
  p.splits = ceil_div(p.reduced_count, p.chunk);
  return p;
}

// Block (blockIdx.x-th group of threads_x outputs, chunk blockIdx.y). Each thread folds the chunk's indices
// r = begin + threadIdx.y, + threads_y, ... for its output; a halving tree over threadIdx.y combines them. Writes the
// output, or with more than one chunk the chunk's partial result to partials[chunk][j].
template <typename T, typename R>
__global__ void reduce_kernel(ReducePlan p, const T* x, typename R::Partial* partials, T* out) {
  __shared__ typename R::Partial shared[kThreads];
  const unsigned tx = threadIdx.x, ty = threadIdx.y, width = blockDim.x, height = blockDim.y;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * p.chunk;
  const int64_t end = min(p.reduced_count, begin + p.chunk);
  for (int64_t group = blockIdx.x; group * width < p.kept_count; group += gridDim.x) {
    const int64_t j = group * width + tx;
    int64_t kept_off[2] = {0, 0};
    auto acc = R::init();
    if (j < p.kept_count) {
      locate(p.kept, j, kept_off);
      for (int64_t r = begin + ty; r < end; r += height) {
        int64_t off[1];
        locate(p.reduced, r, off);
        acc = R::combine(acc, R::take(x[kept_off[0] + off[0]], r));
      }
    }
    shared[ty * width + tx] = acc;
    __syncthreads();
    for (unsigned half = height / 2; half > 0; half /= 2) {
      if (ty < half) shared[ty * width + tx] = R::combine(shared[ty * width + tx], shared[(ty + half) * width + tx]);
      __syncthreads();
    }
    if (ty == 0 && j < p.kept_count) {
      if (partials) partials[static_cast<int64_t>(blockIdx.y) * p.kept_count + j] = shared[tx];
      else out[kept_off[1]] = R::finish(shared[tx]);
    }
    __syncthreads();  // the next group reuses `shared`
  }
}

// Combines each output's chunk results in chunk order.
template <typename T, typename R>
__global__ void reduce_chunks_kernel(ReducePlan p, const typename R::Partial* partials, T* out) {
  for (int64_t j = thread_index(); j < p.kept_count; j += thread_count()) {
    auto acc = partials[j];
    for (int64_t s = 1; s < p.splits; ++s) acc = R::combine(acc, partials[s * p.kept_count + j]);
    int64_t off[2];
    locate(p.kept, j, off);
    out[off[1]] = R::finish(acc);
  }
}

template <typename T, typename R>
void reduce_with(const Iteration& it, const std::vector<int64_t>& out_strides, const T* x, T* out,
                 int64_t out_numel) {
  if (count(it.dims) == 0) {  // nothing to reduce: every output is the fold's start, as on the CPU
    const T empty = R::finish(R::init());
    fill_element(sizeof empty, &empty, out_numel, out);
    return;
  }
  const ReducePlan p = plan_reduce(it, out_strides);
  LS_CHECK(p.kept_count == out_numel, InvalidArgumentError, "reduce: out_strides address ", p.kept_count,
           " output elements, but out has ", out_numel);
  using Partial = typename R::Partial;
  const int64_t groups = ceil_div(p.kept_count, p.threads_x);
  const dim3 grid(static_cast<unsigned>(std::min(groups, kMaxGroupBlocks)), static_cast<unsigned>(p.splits));
  const dim3 block(p.threads_x, p.threads_y);
  if (p.splits == 1) {
    reduce_kernel<T, R><<<grid, block, 0, detail::stream()>>>(p, x, nullptr, out);
    detail::check_launch("reduce_kernel");
    return;
  }
  detail::Scratch partials(static_cast<size_t>(p.splits * p.kept_count) * sizeof(Partial));
  reduce_kernel<T, R><<<grid, block, 0, detail::stream()>>>(p, x, partials.as<Partial>(), out);
  detail::check_launch("reduce_kernel");
  launch("reduce_chunks_kernel", reduce_chunks_kernel<T, R>, p.kept_count, p,
         static_cast<const Partial*>(partials.as<Partial>()), out);
}

}  // namespace

void reduce(Reduce op, DType dtype, const Iteration& it, const std::vector<int64_t>& out_strides, const void* x,
            void* out, int64_t out_numel) {
  LS_CHECK(dtype != DType::bfloat16, InvalidArgumentError, "reduce ", reduce_name(op),
           ": bfloat16 tensors are computed in float32: cast to float32 first");
  if (out_numel == 0) return;
  visit_storage(dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Bf16>) {
      const auto* px = static_cast<const T*>(x);
      auto* po = static_cast<T*>(out);
      switch (op) {
        case Reduce::sum: return reduce_with<T, Sum<T, false>>(it, out_strides, px, po, out_numel);
        case Reduce::sum_of_squares: return reduce_with<T, Sum<T, true>>(it, out_strides, px, po, out_numel);
        case Reduce::max: return reduce_with<T, Extreme<T, true>>(it, out_strides, px, po, out_numel);
        case Reduce::min: return reduce_with<T, Extreme<T, false>>(it, out_strides, px, po, out_numel);
      }
    }
  });
}

// ---- argmax ----

namespace {

// Rows at least this long (with inner == 1) get a block each, threads reading consecutive elements.
constexpr int64_t kArgmaxBlockRow = 256;

// A thread per output, scanning as the CPU does: the first index whose value is greater than all before it.
template <typename T>
__global__ void argmax_kernel(int64_t outer, int64_t n, int64_t inner, const T* x, int64_t* out) {
  for (int64_t t = thread_index(); t < outer * inner; t += thread_count()) {
    const int64_t o = t / inner, j = t - o * inner;
    const T* p = x + o * n * inner + j;
    int64_t best = 0;
    if (n > 0) {
      T top = p[0];
      for (int64_t i = 1; i < n; ++i) {
        const T v = p[i * inner];
        if (v > top) {
          top = v;
          best = i;
        }
      }
    }
    out[t] = best;
  }
}

// An element and its index; at < 0 when there is none yet.
template <typename T> struct Candidate {
  T v;
  int64_t at;
};

template <typename T> __device__ Candidate<T> better(Candidate<T> a, Candidate<T> b) {
  if (b.at < 0) return a;
  if (a.at < 0) return b;
  if (b.v > a.v) return b;
  if (a.v > b.v) return a;
  return b.at < a.at ? b : a;
}

// A block per row of a contiguous [rows, n]. The CPU's scan never moves off a NaN first element and never moves to
// a later NaN, so the answer is 0 when the row starts with NaN, else the first maximum of the other elements.
template <typename T> __global__ void argmax_rows_kernel(int64_t rows, int64_t n, const T* x, int64_t* out) {
  __shared__ Candidate<T> shared[kThreads];
  const unsigned t = threadIdx.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* p = x + row * n;
    if (is_nan(p[0])) {  // the same for every thread of the block
      if (t == 0) out[row] = 0;
      continue;
    }
    Candidate<T> best{T(0), -1};
    for (int64_t i = t; i < n; i += blockDim.x)
      if (!is_nan(p[i])) best = better(best, Candidate<T>{p[i], i});
    shared[t] = best;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) shared[t] = better(shared[t], shared[t + half]);
      __syncthreads();
    }
    if (t == 0) out[row] = shared[0].at;
    __syncthreads();  // the next row reuses `shared`
  }
}

}  // namespace

void argmax(DType dtype, int64_t outer, int64_t n, int64_t inner, const void* x, int64_t* out) {
  LS_CHECK(dtype != DType::bfloat16, InvalidArgumentError,
           "argmax: bfloat16 tensors are computed in float32: cast to float32 first");
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  visit_storage(dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Bf16>) {
      const auto* px = static_cast<const T*>(x);
      if (inner == 1 && n >= kArgmaxBlockRow) {
        const auto blocks = static_cast<unsigned>(std::min(outer, kMaxGroupBlocks));
        argmax_rows_kernel<T><<<blocks, kThreads, 0, detail::stream()>>>(outer, n, px, out);
        detail::check_launch("argmax_rows_kernel");
      } else {
        launch("argmax_kernel", argmax_kernel<T>, outputs, outer, n, inner, px, out);
      }
    }
  });
}

// ---- optimizer updates ----
// The expressions of keras/optimizers.cc, in the same order, each step rounded (rn::), one kernel per variant.

namespace {

template <typename T, bool kMomentum, bool kNesterov>
__global__ void sgd_kernel(int64_t n, T* w, const T* g, T* m, T lr, T mu) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    if constexpr (!kMomentum) {
      w[i] = rn::sub(w[i], rn::mul(g[i], lr));
    } else {
      const T momentum = rn::add(rn::mul(-g[i], lr), rn::mul(m[i], mu));
      m[i] = momentum;
      if constexpr (kNesterov) w[i] = rn::add(w[i], rn::add(rn::mul(-g[i], lr), rn::mul(momentum, mu)));
      else w[i] = rn::add(w[i], momentum);
    }
  }
}

template <typename T, bool kCentered, bool kMomentum>
__global__ void rmsprop_kernel(int64_t n, T* w, const T* g, T* v, T* m, T* a, T lr, T rho, T one_minus_rho, T eps,
                               T mu) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const T gi = g[i];
    const T velocity = rn::add(rn::mul(rho, v[i]), rn::mul(rn::mul(one_minus_rho, gi), gi));
    v[i] = velocity;
    T denominator = rn::add(velocity, eps);
    if constexpr (kCentered) {
      const T average = rn::add(rn::mul(rho, a[i]), rn::mul(one_minus_rho, gi));
      a[i] = average;
      denominator = rn::add(rn::sub(velocity, rn::mul(average, average)), eps);
    }
    const T increment = rn::div(rn::mul(lr, gi), rn::sqrt(denominator));
    if constexpr (kMomentum) {
      const T momentum = rn::add(rn::mul(mu, m[i]), increment);
      m[i] = momentum;
      w[i] = rn::sub(w[i], momentum);
    } else {
      w[i] = rn::sub(w[i], increment);
    }
  }
}

template <typename T, bool kAmsgrad>
__global__ void adam_kernel(int64_t n, T* w, const T* g, T* m, T* v, T* vhat, T alpha, T one_minus_b1,
                            T one_minus_b2, T eps) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const T gi = g[i];
    const T momentum = rn::add(m[i], rn::mul(rn::sub(gi, m[i]), one_minus_b1));
    m[i] = momentum;
    const T velocity = rn::add(v[i], rn::mul(rn::sub(rn::mul(gi, gi), v[i]), one_minus_b2));
    v[i] = velocity;
    T root;
    if constexpr (kAmsgrad) {
      const T top = vhat[i] < velocity ? velocity : vhat[i];  // std::max(vhat, v)
      vhat[i] = top;
      root = rn::sqrt(top);
    } else {
      root = rn::sqrt(velocity);
    }
    w[i] = rn::sub(w[i], rn::div(rn::mul(momentum, alpha), rn::add(root, eps)));
  }
}

template <typename T>
__global__ void adagrad_kernel(int64_t n, T* w, const T* g, T* accumulator, T lr, T eps) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const T gi = g[i];
    const T sum = rn::add(accumulator[i], rn::mul(gi, gi));
    accumulator[i] = sum;
    w[i] = rn::sub(w[i], rn::div(rn::mul(lr, gi), rn::sqrt(rn::add(sum, eps))));
  }
}

}  // namespace

// momentum is null when the optimizer has no momentum slot (momentum 0), as the CPU's plain rule.
template <typename T> void sgd_update(int64_t n, T* w, const T* g, T* momentum, T lr, T mu, bool nesterov) {
  if (n == 0) return;
  auto run = [&](auto kernel) { launch("sgd_kernel", kernel, n, n, w, g, momentum, lr, mu); };
  if (!momentum) return run(sgd_kernel<T, false, false>);
  if (nesterov) return run(sgd_kernel<T, true, true>);
  run(sgd_kernel<T, true, false>);
}

template <typename T>
void rmsprop_update(int64_t n, T* w, const T* g, T* v, T* m, T* a, T lr, T rho, T one_minus_rho, T eps, T mu) {
  if (n == 0) return;
  auto run = [&](auto kernel) {
    launch("rmsprop_kernel", kernel, n, n, w, g, v, m, a, lr, rho, one_minus_rho, eps, mu);
  };
  if (a && m) return run(rmsprop_kernel<T, true, true>);
  if (a) return run(rmsprop_kernel<T, true, false>);
  if (m) return run(rmsprop_kernel<T, false, true>);
  run(rmsprop_kernel<T, false, false>);
}

template <typename T>
void adam_update(int64_t n, T* w, const T* g, T* m, T* v, T* vhat, T alpha, T one_minus_b1, T one_minus_b2, T eps) {
  if (n == 0) return;
  auto run = [&](auto kernel) {
    launch("adam_kernel", kernel, n, n, w, g, m, v, vhat, alpha, one_minus_b1, one_minus_b2, eps);
  };
  if (vhat) return run(adam_kernel<T, true>);
  run(adam_kernel<T, false>);
}

template <typename T> void adagrad_update(int64_t n, T* w, const T* g, T* accumulator, T lr, T eps) {
  if (n == 0) return;
  launch("adagrad_kernel", adagrad_kernel<T>, n, n, w, g, accumulator, lr, eps);
}

template void sgd_update<float>(int64_t, float*, const float*, float*, float, float, bool);
template void sgd_update<double>(int64_t, double*, const double*, double*, double, double, bool);
template void rmsprop_update<float>(int64_t, float*, const float*, float*, float*, float*, float, float, float, float,
                                    float);
template void rmsprop_update<double>(int64_t, double*, const double*, double*, double*, double*, double, double,
                                     double, double, double);
template void adam_update<float>(int64_t, float*, const float*, float*, float*, float*, float, float, float, float);
template void adam_update<double>(int64_t, double*, const double*, double*, double*, double*, double, double, double,
                                  double);
template void adagrad_update<float>(int64_t, float*, const float*, float*, float, float);
template void adagrad_update<double>(int64_t, double*, const double*, double*, double, double);

}  // namespace lockstep::kernels::cuda
