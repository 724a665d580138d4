// The number of threads one op may use (TF: intra_op_parallelism_threads). It applies to oneDNN's
// OpenMP pool and lockstep's own loops. With several workers on one host give each cores/workers.
#pragma once

namespace lockstep {

// n >= 1; 0 means the default: $OMP_NUM_THREADS, else the number of cores.
void set_num_threads(int n);
int num_threads();

}  // namespace lockstep
