// The number of threads one op may use (TF: intra_op_parallelism_threads). It applies to oneDNN's
// OpenMP pool and lockstep's own loops. With several workers on one host give each cores/workers.
#pragma once

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace lockstep {

// At most this many threads per usable core (the cores this process may run on).
inline constexpr int kThreadsPerCoreLimit = 4;

// n >= 1; 0 means the default: $OMP_NUM_THREADS, else the number of usable cores. A count above
// max_num_threads() is capped there, with a warning.
void set_num_threads(int n);
int num_threads();
// The cores this process may run on (its CPU affinity), and kThreadsPerCoreLimit times that.
int usable_cores();
int max_num_threads();

namespace detail {
// ThreadSanitizer cannot see the fork and join of an OpenMP region: Debian's libgomp is not built with it.
// These tell it what libgomp guarantees, so that a worker thread's writes are not reported as racing with
// the caller's reads after the region (make test-tsan). Nothing in other builds.
inline void tsan_release([[maybe_unused]] void* sync) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(sync);
#endif
}
inline void tsan_acquire([[maybe_unused]] void* sync) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(sync);
#endif
}
}  // namespace detail

// body(i) for every i in [0, n): on the OpenMP pool, statically scheduled, when `parallel`, else in order on
// this thread. lockstep's own loops go through here rather than `#pragma omp parallel for` (see detail above).
// The region's own glue is not instrumented: the compiler passes it the captured variables in a block that
// libgomp hands to the workers before any annotation could run. body is instrumented (it is not inlined here).
template <typename F>
__attribute__((no_sanitize("thread"))) void parallel_for(int64_t n, bool parallel, F&& body) {
  if (!parallel) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  char sync;  // any address: TSan's synchronisation object for this region
  detail::tsan_release(&sync);
#pragma omp parallel
  {
    detail::tsan_acquire(&sync);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
    detail::tsan_release(&sync);
  }
  detail::tsan_acquire(&sync);
}

}  // namespace lockstep
