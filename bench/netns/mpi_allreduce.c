// OpenMPI's own MPI_Allreduce timed the way `lockstep bench allreduce` times its backends, the reference
// the netns harness (bench/netns/run.py) measures lockstep against. Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c
// Run: mpirun -np N ./mpi_allreduce [--sizes-kib 4,64,1024] [--iters 10] [--label openmpi-ring]
// Rank 0 prints one line per size: `<label> <MiB> MiB  <ms> ms  algbw <x> GB/s  busbw <y> GB/s`, the median
// over --iters of the slowest rank's time (each iteration starts after a barrier); busbw = algbw * 2(p-1)/p.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* sizes = "4,64,1024,16384,65536";
  const char* label = "openmpi";
  int iters = 10, warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--sizes-kib") == 0) sizes = argv[i + 1];
    else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--label") == 0) label = argv[i + 1];
    else {
      if (rank == 0) fprintf(stderr, "mpi_allreduce: unknown option %s (expected --sizes-kib, --iters, --warmup, --label)\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (iters < 1) iters = 1;
  double* times = malloc(sizeof(double) * (size_t)iters);
  char* list = strdup(sizes);
  for (char* item = strtok(list, ","); item != NULL; item = strtok(NULL, ",")) {
    const size_t bytes = (size_t)(atof(item) * 1024.0);
    const size_t count = bytes / sizeof(float);
    float* buffer = malloc(count * sizeof(float));
    for (size_t j = 0; j < count; ++j) buffer[j] = (float)(rank + 1);
    for (int it = -warmup; it < iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buffer, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double elapsed = MPI_Wtime() - start, slowest = 0;
      MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (it >= 0) times[it] = slowest;
    }
    if (rank == 0) {
      qsort(times, (size_t)iters, sizeof(double), compare_doubles);
      const double median = iters % 2 ? times[iters / 2] : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
      const double algbw = (double)(count * sizeof(float)) / median / 1e9;
      printf("%s %g MiB  %.3f ms  algbw %.3f GB/s  busbw %.3f GB/s\n", label, (double)(count * sizeof(float)) / 1048576.0,
             median * 1e3, algbw, algbw * 2.0 * (size - 1) / size);
      fflush(stdout);
    }
    free(buffer);
  }
  free(list);
  free(times);
  MPI_Finalize();
  return 0;
}
