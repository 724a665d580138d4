// Intra-op thread count, applied to the OpenMP pool that oneDNN and lockstep's loops share.
#include "lockstep/core/threads.h"

#include <omp.h>

#include <cstdlib>
#include <thread>

#include "lockstep/core/error.h"

namespace lockstep {

void set_num_threads(int n) {
  LS_CHECK(n >= 0, ValueError, "thread count must be >= 1 (or 0 for the default), got ", n);
  if (n == 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    n = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace lockstep
