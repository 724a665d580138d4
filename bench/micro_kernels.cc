// Microbenchmarks of the CPU kernels on the tutorial model's shapes at batch 64, single-threaded, beside a large
// SGEMM run by oneDNN and by OpenBLAS as the machine's measured peak, and the convolution oneDNN would run with
// HWIO filters (the layout choice in src/kernels/cpu/conv.cc). Each reports GFLOP/s and the threads that really
// ran it (process CPU time over wall time: about 1 when single-threaded).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <dnnl.hpp>
#include <string>
#include <vector>

#include "lockstep/kernels/cpu/kernels.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads();

namespace {

using namespace lockstep::kernels::cpu;

// Input 64x28x28x1 -> Conv2D 32 filters 3x3 valid (+bias).
constexpr Conv2dShape kTutorialConv{64, 28, 28, 1, 3, 3, 32, 1, 1, 0, 0, 0, 0};

// Process CPU time over wall time from construction to report(): the threads that really ran (a "single-thread"
// figure above the core's FMA peak would mean more did).
class ThreadsUsed {
 public:
  ThreadsUsed() : wall_(std::chrono::steady_clock::now()), cpu_(process_cpu_seconds()) {}
  void report(benchmark::State& state) const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    state.counters["threads"] = (process_cpu_seconds() - cpu_) / wall;
  }

 private:
  static double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

void report_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

double conv_flops(const Conv2dShape& s) { return 2.0 * s.n * s.out_h() * s.out_w() * s.o * s.kh * s.kw * s.c; }

enum class ConvPass { forward, backward_data, backward_weights };

void bm_conv(benchmark::State& state, ConvPass pass) {
  const Conv2dShape& s = kTutorialConv;
  std::vector<float> x(s.n * s.h * s.w * s.c, 0.5f), w(s.kh * s.kw * s.c * s.o, 0.5f), b(s.o, 0.5f);
  std::vector<float> y(s.n * s.out_h() * s.out_w() * s.o, 0.5f);
  const ThreadsUsed threads;
  for (auto _ : state) {
    switch (pass) {
      case ConvPass::forward: conv2d_forward(s, x.data(), w.data(), b.data(), y.data()); break;
      case ConvPass::backward_data: conv2d_backward_data(s, y.data(), w.data(), x.data()); break;
      case ConvPass::backward_weights: conv2d_backward_weights(s, x.data(), y.data(), w.data(), b.data()); break;
    }
    benchmark::ClobberMemory();
  }
  threads.report(state);
  report_flops(state, conv_flops(s));
}

// The same convolution as oneDNN runs it when handed our NHWC/HWIO layouts directly, without the filter
// reorder conv.cc adds: the baseline for that choice.
void bm_conv_hwio_filters(benchmark::State& state, ConvPass pass) {
  using namespace dnnl;
  using tag = memory::format_tag;
  const Conv2dShape& s = kTutorialConv;
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  auto md = [](memory::dims d, tag t) { return memory::desc(d, memory::data_type::f32, t); };
  const auto src = md({s.n, s.c, s.h, s.w}, tag::nhwc), wei = md({s.o, s.c, s.kh, s.kw}, tag::hwio);
  const auto bias = md({s.o}, tag::a), dst = md({s.n, s.o, s.out_h(), s.out_w()}, tag::nhwc);
  const memory::dims strides{1, 1}, pad{0, 0};
  const auto algo = algorithm::convolution_direct;
  const convolution_forward::primitive_desc fwd(
      {prop_kind::forward_training, algo, src, wei, bias, dst, strides, pad, pad}, eng);
  memory x(src, eng), w(wei, eng), b(bias, eng), y(dst, eng);
  primitive p;
  std::unordered_map<int, memory> args;
  switch (pass) {
    case ConvPass::forward:
      p = convolution_forward(fwd);
      args = {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}};
      break;
    case ConvPass::backward_data:
      p = convolution_backward_data({{algo, src, wei, dst, strides, pad, pad}, eng, fwd});
      args = {{DNNL_ARG_DIFF_DST, y}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, x}};
      break;
    case ConvPass::backward_weights:
      p = convolution_backward_weights({{algo, src, wei, bias, dst, strides, pad, pad}, eng, fwd});
      args = {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, y}, {DNNL_ARG_DIFF_WEIGHTS, w}, {DNNL_ARG_DIFF_BIAS, b}};
      break;
  }
  const ThreadsUsed threads;
  for (auto _ : state) {
    p.execute(strm, args);
    strm.wait();
  }
  threads.report(state);
  report_flops(state, conv_flops(s));
}

// A named GEMM: c[m x n] = op(a) @ op(b).
struct Gemm {
  const char* name;
  int64_t m, n, k;
  bool transpose_a, transpose_b;
};
const Gemm kGemms[] = {
    {"dense_21632x128/forward", 64, 128, 21632, false, false},          // X[64x21632] @ W[21632x128]
    {"dense_21632x128/backward_data", 64, 21632, 128, false, true},     // dY[64x128] @ W^T
    {"dense_21632x128/backward_weights", 21632, 128, 64, true, false},  // X^T[21632x64] @ dY[64x128]
    {"dense_128x10/forward", 64, 10, 128, false, false},
    {"dense_128x10/backward_data", 64, 128, 10, false, true},
    {"dense_128x10/backward_weights", 128, 10, 64, true, false},
    {"sgemm_2048", 2048, 2048, 2048, false, false},
};

void bm_matmul(benchmark::State& state, Gemm g) {
  std::vector<float> a(g.m * g.k, 0.5f), b(g.k * g.n, 0.5f), c(g.m * g.n);
  const MatmulShape s{1, g.m, g.n, g.k, g.transpose_a, g.transpose_b, g.m * g.k, g.k * g.n};
  const ThreadsUsed threads;
  for (auto _ : state) {
    matmul(s, a.data(), b.data(), c.data());
    benchmark::ClobberMemory();
  }
  threads.report(state);
  report_flops(state, 2.0 * g.m * g.n * g.k);
}

void bm_openblas(benchmark::State& state, Gemm g) {
  std::vector<float> a(g.m * g.k, 0.5f), b(g.k * g.n, 0.5f), c(g.m * g.n);
  const int lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
  const ThreadsUsed threads;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, g.transpose_a ? CblasTrans : CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans,
                g.m, g.n, g.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), g.n);
    benchmark::ClobberMemory();
  }
  threads.report(state);
  report_flops(state, 2.0 * g.m * g.n * g.k);
}

}  // namespace

int main(int argc, char** argv) {
  // Single-threaded: the numbers compare kernels, not core counts.
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  // OpenMP threads started by a library's own pool do not see omp_set_num_threads from this thread: run with
  // OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 too (make bench and bench/compare.sh do), and check `threads`.
  auto env = [](const char* name) { return std::getenv(name) ? std::getenv(name) : "(unset)"; };
  std::printf("omp_get_max_threads() = %d, openblas_get_num_threads() = %d, OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s\n",
              omp_get_max_threads(), openblas_get_num_threads(), env("OMP_NUM_THREADS"), env("OPENBLAS_NUM_THREADS"));

  const std::pair<const char*, ConvPass> passes[] = {{"forward", ConvPass::forward},
                                                     {"backward_data", ConvPass::backward_data},
                                                     {"backward_weights", ConvPass::backward_weights}};
  for (const auto& [name, pass] : passes)
    benchmark::RegisterBenchmark((std::string("conv2d_64x28x28x1_3x3x32/") + name).c_str(), bm_conv, pass);
  for (const auto& [name, pass] : passes)
    benchmark::RegisterBenchmark((std::string("conv2d_64x28x28x1_3x3x32/hwio_filters/") + name).c_str(),
                                 bm_conv_hwio_filters, pass);
  for (const Gemm& g : kGemms) {
    benchmark::RegisterBenchmark((std::string("matmul/") + g.name).c_str(), bm_matmul, g);
    benchmark::RegisterBenchmark((std::string("openblas/") + g.name).c_str(), bm_openblas, g);
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
