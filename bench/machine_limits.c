/* The limits of this machine that bench/compare.sh measures lockstep against, in one run: the core clock (a
   chain of dependent adds, one per cycle, over this thread's CPU time), the single-thread FMA peak (independent FMA chains, float32,
   AVX2 and, where the CPU has it, AVX-512; the higher is the peak), and memory bandwidth (STREAM triad, a[i] = b[i] + s * c[i], counted as 3 x 8 bytes per element) on one thread
   and on all. Prints one `name value unit` line per figure; best of several runs each.
     cc -O2 -mavx2 -mfma -fopenmp bench/machine_limits.c -o machine_limits && ./machine_limits */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* The single-thread figures count this thread's CPU time, so other processes on a busy machine do not lower them. */
static double now(void) { return seconds(CLOCK_MONOTONIC); }
static double cpu_now(void) { return seconds(CLOCK_THREAD_CPUTIME_ID); }

/* 10 dependent adds per iteration: 10 cycles, whatever the loop overhead (it runs beside them). Each adds the
   register to itself: Intel cores since Golden Cove fold a chain of `add $1, reg` at register renaming, several a
   cycle (a Xeon of that kind measured 18 GHz with it), but not an add of two registers. */
static double clock_ghz(void) {
  const long iterations = 50000000;
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    long n = iterations, x = 0;
    const double t = cpu_now();
    __asm__ volatile(
        "1:\n"
        "add %1, %1\n add %1, %1\n add %1, %1\n add %1, %1\n add %1, %1\n"
        "add %1, %1\n add %1, %1\n add %1, %1\n add %1, %1\n add %1, %1\n"
        "dec %0\n jnz 1b\n"
        : "+r"(n), "+r"(x));
    const double dt = cpu_now() - t;
    if (dt < best) best = dt;
  }
  return 10.0 * (double)iterations / best / 1e9;
}

/* 12 independent chains of 8-wide FMAs: enough to cover the FMA latency on both of Zen 2's FMA pipes. */
static double fma_gflops_avx2(void) {
  const long iterations = 20000000;
  double best = 1e30;
  float out = 0;
  for (int r = 0; r < 5; ++r) {
    __m256 acc[12];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_set1_ps((float)k);
    const double t = cpu_now();
    for (long i = 0; i < iterations; ++i) {
      acc[0] = _mm256_fmadd_ps(acc[0], a, b);
      acc[1] = _mm256_fmadd_ps(acc[1], a, b);
      acc[2] = _mm256_fmadd_ps(acc[2], a, b);
      acc[3] = _mm256_fmadd_ps(acc[3], a, b);
      acc[4] = _mm256_fmadd_ps(acc[4], a, b);
      acc[5] = _mm256_fmadd_ps(acc[5], a, b);
      acc[6] = _mm256_fmadd_ps(acc[6], a, b);
      acc[7] = _mm256_fmadd_ps(acc[7], a, b);
      acc[8] = _mm256_fmadd_ps(acc[8], a, b);
      acc[9] = _mm256_fmadd_ps(acc[9], a, b);
      acc[10] = _mm256_fmadd_ps(acc[10], a, b);
      acc[11] = _mm256_fmadd_ps(acc[11], a, b);
    }
    const double dt = cpu_now() - t;
    if (dt < best) best = dt;
    for (int k = 0; k < 12; ++k) out += _mm256_cvtss_f32(acc[k]);
  }
  if (out == 42.0f) printf("#\n"); /* keeps the chains alive */
  return 12.0 * 8 * 2 * (double)iterations / best / 1e9;
}

/* The same with 16-wide AVX-512 FMAs: twice the AVX2 peak on cores with two 512-bit FMA units (Intel Xeons since
   Skylake-SP), the same on Zen 4, which splits each into two 256-bit halves. */
__attribute__((target("avx512f"))) static double fma_gflops_avx512(void) {
  const long iterations = 20000000;
  double best = 1e30;
  float out = 0;
  for (int r = 0; r < 5; ++r) {
    __m512 acc[12];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps((float)k);
    const double t = cpu_now();
    for (long i = 0; i < iterations; ++i) {
      acc[0] = _mm512_fmadd_ps(acc[0], a, b);
      acc[1] = _mm512_fmadd_ps(acc[1], a, b);
      acc[2] = _mm512_fmadd_ps(acc[2], a, b);
      acc[3] = _mm512_fmadd_ps(acc[3], a, b);
      acc[4] = _mm512_fmadd_ps(acc[4], a, b);
      acc[5] = _mm512_fmadd_ps(acc[5], a, b);
      acc[6] = _mm512_fmadd_ps(acc[6], a, b);
      acc[7] = _mm512_fmadd_ps(acc[7], a, b);
      acc[8] = _mm512_fmadd_ps(acc[8], a, b);
      acc[9] = _mm512_fmadd_ps(acc[9], a, b);
      acc[10] = _mm512_fmadd_ps(acc[10], a, b);
      acc[11] = _mm512_fmadd_ps(acc[11], a, b);
    }
    const double dt = cpu_now() - t;
    if (dt < best) best = dt;
    for (int k = 0; k < 12; ++k) out += _mm512_reduce_add_ps(acc[k]);
  }
  if (out == 42.0f) printf("#\n"); /* keeps the chains alive */
  return 12.0 * 16 * 2 * (double)iterations / best / 1e9;
}

static double triad_gbs(double* a, const double* b, const double* c, long n, int threads) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const double t = now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    const double dt = now() - t;
    if (dt < best) best = dt;
  }
  return 3.0 * 8.0 * (double)n / best / 1e9;
}

int main(void) {
  const long n = 1L << 25; /* 256 MiB per array: far beyond the caches */
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  if (!a || !b || !c) return 1;
  const int all = omp_get_num_procs();
#pragma omp parallel for num_threads(all) schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2; /* first touch by the threads that use it */
  const double ghz = clock_ghz();
  printf("clock %.3f GHz\n", ghz);
  const double fma_avx2 = fma_gflops_avx2();
  const double fma_avx512 = __builtin_cpu_supports("avx512f") ? fma_gflops_avx512() : 0;
  const double fma = fma_avx512 > fma_avx2 ? fma_avx512 : fma_avx2;
  printf("fma_peak_1thread %.1f GFLOP/s\n", fma);
  printf("fma_peak_avx2 %.1f GFLOP/s\n", fma_avx2);
  if (fma_avx512 > 0) printf("fma_peak_avx512 %.1f GFLOP/s\n", fma_avx512);
  printf("fma_flop_per_cycle %.1f FLOP/cycle\n", fma / ghz);
  printf("triad_1thread %.2f GB/s\n", triad_gbs(a, b, c, n, 1));
  printf("triad_all_threads %.2f GB/s\n", triad_gbs(a, b, c, n, all));
  printf("threads_all %d\n", all);
  free(a), free(b), free(c);
  return 0;
}
