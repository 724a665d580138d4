// Shared by the collective backends: element-wise reductions, one combine rule per ReduceOp and dtype, so
// every backend rounds the same way (bfloat16 goes through float32 at every step), the ring all-reduce of the
// point-to-point backends, the names of a communicator's peers, and the error a broken communicator repeats.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lockstep/core/dtype.h"
#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute::detail {

// Who is who in a communicator, for messages (names) and for the errors' culprits (tasks).
struct Peers {
  int rank = 0;
  int size = 1;
  std::vector<std::string> names;  // e.g. "worker:1 at host:port", or empty
  std::vector<std::string> tasks;  // e.g. "worker:1", or empty

  // "rank 2" or "worker:2 at host:port (rank 2)".
  std::string name(int r) const {
    if (r >= 0 && static_cast<size_t>(r) < names.size() && !names[static_cast<size_t>(r)].empty())
      return make_message(names[static_cast<size_t>(r)], " (rank ", r, ")");
    return make_message("rank ", r);
  }
  // The task of rank r ("worker:2"), or empty.
  std::string task(int r) const {
    return r >= 0 && static_cast<size_t>(r) < tasks.size() ? tasks[static_cast<size_t>(r)] : std::string();
  }
  std::string self() const { return name(rank); }
};

// Refuses a rank outside [0, size) and peer names or tasks that do not name every rank; `what` is the options
// struct's name ("GlooOptions").
inline void check_rendezvous(const RendezvousOptions& options, int rank, int size, const char* what) {
  LS_CHECK(rank >= 0 && rank < size, ValueError, what, ": rank must be in [0, ", size, "), got ", rank);
  LS_CHECK(options.peer_names.empty() || options.peer_names.size() == static_cast<size_t>(size), ValueError, what,
           ".peer_names must name all ", size, " ranks or none, got ", options.peer_names.size());
  LS_CHECK(options.peer_tasks.empty() || options.peer_tasks.size() == static_cast<size_t>(size), ValueError, what,
           ".peer_tasks must name all ", size, " ranks or none, got ", options.peer_tasks.size());
}

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

// A communicator's first failure (later ones, on this or other threads, are its consequences), which every later
// collective raises again.
class FirstFailure {
 public:
  bool happened() const { return happened_.load(); }
  // Throws the recorded failure, if any.
  void check() {
    if (!happened_.load()) return;
    std::lock_guard lock(mutex_);
    failure_->raise();
  }
  void record(Failure failure) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::move(failure);
    happened_.store(true);
  }
  // Records `failure` unless one came first, and throws the first.
  [[noreturn]] void raise(Failure failure) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::move(failure);
    happened_.store(true);
    failure_->raise();
  }

 private:
  std::atomic<bool> happened_{false};
  std::mutex mutex_;  // guards failure_
  std::optional<Failure> failure_;
};

// The failure of collective `op` ("MPI all_reduce (tag 3) on worker:0 (rank 0) of 2") past its timeout.
inline Failure timed_out(const std::string& op, std::chrono::milliseconds timeout) {
  return {Failure::deadline,
          make_message(op, " timed out after ", timeout.count(),
                       " ms: a peer did not take part; a worker stopped issuing collectives, issued them in another "
                       "order or is stuck: check the other workers' logs, or raise "
                       "CommunicationOptions.timeout_seconds if a step legitimately takes longer")};
}

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

// Calls f(T{}) for the dtypes collectives reduce; anything else is an InvalidArgumentError naming `what` (a view:
// no string is made on the way of every all-reduce).
template <typename F>
decltype(auto) visit_reducible(DType dtype, std::string_view what, F&& f) {
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

// A ring all-reduce over point-to-point messages, in place over `count` elements of `element` bytes at `data`:
// a ring reduce-scatter, then a ring all-gather. Each rank sends and receives 2(n-1)/n of the buffer, the least
// any all-reduce can, and reduces 1/n of it; each segment is reduced on one rank and copied to the others, so all
// ranks hold the same bits. The reduce-scatter goes in pieces of about `piece` bytes, received into `staging` and
// reduced while still in cache. exchange(step, out, out_bytes, in, in_bytes) sends out_bytes at out to rank + 1
// while receiving in_bytes from rank - 1 into in; step (0 to 2n - 3) tells one call's messages apart.
template <typename Exchange>
void ring_all_reduce(char* data, size_t count, size_t element, int rank, int size, ReduceFunction reduce,
                     size_t piece, std::vector<std::byte>& staging, Exchange&& exchange) {
  const auto n = static_cast<size_t>(size), me = static_cast<size_t>(rank);
  auto begin = [&](size_t segment) { return segment * count / n * element; };  // segment i, in bytes
  auto length = [&](size_t segment) { return begin(segment + 1) - begin(segment); };
  piece = std::max(piece / element, size_t{1}) * element;
  staging.resize(std::min(piece, length(n - 1)));  // the last segment is the longest
  char* const in_piece = reinterpret_cast<char*>(staging.data());
  // Reduce-scatter: at step s this rank sends segment (me - s) and reduces segment (me - s - 1) into its own,
  // so that it ends holding segment (me + 1) reduced over all ranks.
  for (size_t s = 0; s + 1 < n; ++s) {
    const size_t out = (me + n - s) % n, in = (me + 2 * n - s - 1) % n;
    for (size_t at = 0; at < std::max(length(out), length(in)); at += piece) {
      const size_t out_bytes = at < length(out) ? std::min(piece, length(out) - at) : 0;
      const size_t in_bytes = at < length(in) ? std::min(piece, length(in) - at) : 0;
      exchange(s, data + begin(out) + at, out_bytes, in_piece, in_bytes);
      char* mine = data + begin(in) + at;
      reduce(mine, in_piece, mine, in_bytes / element);
    }
  }
  // All-gather: the fully reduced segments go round the ring, received in place.
  for (size_t s = 0; s + 1 < n; ++s) {
    const size_t out = (me + 1 + n - s) % n, in = (me + n - s) % n;
    exchange(n - 1 + s, data + begin(out), length(out), data + begin(in), length(in));
  }
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
