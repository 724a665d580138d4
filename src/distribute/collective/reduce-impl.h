// Shared by the collective backends: element-wise reductions, one combine rule per ReduceOp and dtype, so
// every backend rounds the same way (bfloat16 goes through float32 at every step), and the error a broken
// communicator repeats.
#pragma once
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

#include "lockstep/core/dtype.h"
#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute::detail {

// Why a communicator stopped, and the task it blames; every later collective throws the same.
struct Failure {
  enum Kind { unavailable, deadline, mismatch } kind;
  std::string message;
  std::string culprit = {};
  [[noreturn]] void raise() const {
    if (kind == deadline) throw DeadlineExceededError(message, Culprit{culprit});
    if (kind == mismatch) throw InvalidArgumentError(message, Culprit{culprit});
    throw UnavailableError(message, Culprit{culprit});
  }
};

// a (op) b for one element. Signed integer sums wrap (two's complement) instead of being undefined;
// a NaN wins in MAX and MIN whatever the order, so the reduction order never hides a NaN gradient.
template <ReduceOp kOp, typename T>
inline T combine(T a, T b) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(combine<kOp>(static_cast<float>(a), static_cast<float>(b)));
  } else if constexpr (kOp == ReduceOp::MAX || kOp == ReduceOp::MIN) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(b)) return b;
    }
    return (kOp == ReduceOp::MAX ? a < b : b < a) ? b : a;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;  // SUM, and MEAN's sum
  }
}

// out[i] = a[i] (op) b[i]; out may alias a or b. The signature of gloo's AllreduceOptions::Func.
using ReduceFunction = void (*)(void* out, const void* a, const void* b, size_t n);
template <typename T, ReduceOp kOp>
void reduce_elements(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = combine<kOp>(x[i], y[i]);
}
template <typename T>
ReduceFunction reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::MAX:
      return reduce_elements<T, ReduceOp::MAX>;
    case ReduceOp::MIN:
      return reduce_elements<T, ReduceOp::MIN>;
    default:
      return reduce_elements<T, ReduceOp::SUM>;
  }
}

// MEAN = SUM / size, divided in the dtype (bfloat16 through float32, integers truncate toward zero).
template <typename T>
void divide_elements(void* data, size_t n, int size) {
  T* d = static_cast<T*>(data);
  if constexpr (std::is_same_v<T, bfloat16>) {
    for (size_t i = 0; i < n; ++i) d[i] = bfloat16(static_cast<float>(d[i]) / static_cast<float>(size));
  } else {
    for (size_t i = 0; i < n; ++i) d[i] = d[i] / static_cast<T>(size);
  }
}

// Calls f(T{}) for the dtypes collectives reduce; anything else is an InvalidArgumentError naming `what`.
template <typename F>
decltype(auto) visit_reducible(DType dtype, const std::string& what, F&& f) {
  switch (dtype) {
    case DType::float32:
      return f(float{});
    case DType::bfloat16:
      return f(bfloat16{});
    case DType::float64:
      return f(double{});
    case DType::int64:
      return f(int64_t{});
    case DType::int32:
      return f(int32_t{});
    default:
      break;
  }
  throw InvalidArgumentError(make_message(what, " cannot reduce dtype ", dtype_name(dtype),
                                          "; use float32, bfloat16, float64, int64 or int32 (cast first)"));
}

inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::MEAN:
      return "MEAN";
    case ReduceOp::MAX:
      return "MAX";
    case ReduceOp::MIN:
      return "MIN";
  }
  return "?";
}

}  // namespace lockstep::distribute::detail
