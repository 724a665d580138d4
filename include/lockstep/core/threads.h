// The number of threads one op may use (TF: intra_op_parallelism_threads). It applies to oneDNN's
// OpenMP pool and lockstep's own loops. With several workers on one host give each cores/workers.
#pragma once

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

}  // namespace lockstep
