// Intra-op thread count, applied to the OpenMP pool that oneDNN and lockstep's loops share.
#include "lockstep/core/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"

namespace lockstep {

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int max_num_threads() { return kThreadsPerCoreLimit * usable_cores(); }

void set_num_threads(int n) {
  LS_CHECK(n >= 0, ValueError, "thread count must be >= 1 (or 0 for the default), got ", n);
  const char* source = "thread count";
  if (n == 0) {
    n = usable_cores();
    const char* env = std::getenv("OMP_NUM_THREADS");
    int from_env = 0;
    if (env && std::from_chars(env, env + std::strlen(env), from_env).ec == std::errc() && from_env > 0) {
      n = from_env;
      source = "OMP_NUM_THREADS";
    }
  }
  // Beyond this, threads only take turns on the cores, and OpenMP and oneDNN crash when they cannot create
  // the threads they were promised (--threads 100000 segfaulted).
  if (n > max_num_threads()) {
    log(LogLevel::warning, source, " ", n, " capped at ", max_num_threads(), " (", kThreadsPerCoreLimit, " x the ",
        usable_cores(), " usable cores)");
    n = max_num_threads();
  }
  omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace lockstep
