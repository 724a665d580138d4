// Tests of the CPU kernels: each oneDNN kernel against the naive reference (run in double) over a table of
// shapes, the primitive cache, and the reference kernels themselves on small cases computed by hand.
#include "lockstep/kernels/cpu/kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/core/error.h"
#include "lockstep/kernels/cpu/reference.h"

namespace lockstep::kernels::cpu {

// Readable parameters in the names of failing table rows.
void PrintTo(const Conv2dShape& s, std::ostream* os) {
  *os << "x " << s.n << "x" << s.h << "x" << s.w << "x" << s.c << " filter " << s.kh << "x" << s.kw << "x" << s.o
      << " stride " << s.stride_h << "," << s.stride_w << " pad t" << s.pad_top << " l" << s.pad_left << " b"
      << s.pad_bottom << " r" << s.pad_right;
}
void PrintTo(const Pool2dShape& s, std::ostream* os) {
  *os << (s.kind == PoolKind::max ? "max" : "avg") << " x " << s.n << "x" << s.h << "x" << s.w << "x" << s.c
      << " window " << s.kh << "x" << s.kw << " stride " << s.stride_h << "," << s.stride_w << " pad t" << s.pad_top
      << " l" << s.pad_left << " b" << s.pad_bottom << " r" << s.pad_right;
}
void PrintTo(const MatmulShape& s, std::ostream* os) {
  *os << "batch " << s.batch << " m" << s.m << " n" << s.n << " k" << s.k << (s.transpose_a ? " aT" : "")
      << (s.transpose_b ? " bT" : "") << " a_stride " << s.a_batch_stride << " b_stride " << s.b_batch_stride;
}

namespace {

using Floats = std::vector<float>;
using Doubles = std::vector<double>;

// max |got - want| over max |want|: the error relative to the size of the result.
constexpr double kTolerance = 1e-4;

// Uniform floats from a fixed seed. One generator per test, so a test's data does not depend on which tests ran
// before it (--gtest_filter reproduces a failure).
class RandomFloats {
 public:
  Floats operator()(int64_t n, float lo = -1, float hi = 1) {
    std::uniform_real_distribution<float> dist(lo, hi);
    Floats v(n);
    for (float& x : v) x = dist(gen_);
    return v;
  }

 private:
  std::mt19937 gen_{20240611};
};

Doubles to_double(const Floats& v) { return Doubles(v.begin(), v.end()); }

double relative_error(const Floats& got, const Doubles& want) {
  EXPECT_EQ(got.size(), want.size());
  double max_diff = 0, max_want = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    max_want = std::max(max_want, std::abs(want[i]));
  }
  return max_want == 0 ? max_diff : max_diff / max_want;
}

// --- convolution ---

// n, h, w, c, kh, kw, o, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right
const Conv2dShape kConvShapes[] = {
    {2, 28, 28, 1, 3, 3, 32, 1, 1, 0, 0, 0, 0},   // the tutorial model's first layer
    {1, 5, 7, 3, 1, 1, 4, 1, 1, 0, 0, 0, 0},      // 1x1, batch 1
    {2, 9, 9, 5, 1, 1, 6, 2, 2, 0, 0, 0, 0},      // 1x1 stride 2
    {3, 7, 9, 4, 3, 3, 5, 1, 1, 1, 1, 1, 1},      // 3x3 same
    {2, 8, 8, 3, 3, 3, 8, 2, 2, 0, 0, 1, 1},      // 3x3 stride 2, TF SAME: top 0, bottom 1
    {2, 7, 7, 3, 3, 3, 4, 2, 2, 0, 0, 0, 0},      // stride 2 valid, last row unused
    {1, 11, 13, 2, 5, 5, 3, 1, 1, 2, 2, 2, 2},    // 5x5 same
    {2, 13, 11, 3, 5, 5, 7, 2, 2, 0, 0, 0, 0},    // 5x5 valid stride 2
    {1, 10, 6, 16, 3, 1, 17, 2, 1, 1, 0, 1, 0},   // 3x1 kernel, mixed strides
    {3, 6, 6, 17, 3, 3, 33, 1, 1, 1, 1, 1, 1},    // odd channel counts
    {1, 7, 7, 1, 2, 2, 1, 2, 2, 0, 0, 1, 1},      // 2x2 stride 2 SAME on an odd size
    {1, 12, 12, 32, 3, 3, 64, 1, 1, 0, 0, 0, 0},  // blocked-friendly channel counts
};

// The im2col path of backward-weights fills its buffer from several OpenMP threads once the batch is large
// enough: it must hand them the calling thread's buffer (it once crashed with more than one thread).
TEST(ConvThreads, BackwardWeightsOfALargeBatchOnTwoThreadsMatchesTheReference) {
  RandomFloats random_floats;
  const Conv2dShape s{64, 28, 28, 1, 3, 3, 32, 1, 1, 0, 0, 0, 0};
  const Floats x = random_floats(s.n * s.h * s.w * s.c), dy = random_floats(s.n * s.out_h() * s.out_w() * s.o);
  Floats dw(s.kh * s.kw * s.c * s.o, 42.0f), dbias(s.o, 42.0f);
  Doubles want_dw(dw.size()), want_dbias(s.o);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), dbias.data());
  omp_set_num_threads(saved);
  ref::conv2d_backward_weights(s, to_double(x).data(), to_double(dy).data(), want_dw.data(), want_dbias.data());
  EXPECT_LT(relative_error(dw, want_dw), kTolerance);
  EXPECT_LT(relative_error(dbias, want_dbias), kTolerance);
}

class ConvTest : public testing::TestWithParam<Conv2dShape> {};

TEST_P(ConvTest, MatchesReference) {
  RandomFloats random_floats;
  const Conv2dShape& s = GetParam();
  const int64_t x_size = s.n * s.h * s.w * s.c, w_size = s.kh * s.kw * s.c * s.o;
  const int64_t y_size = s.n * s.out_h() * s.out_w() * s.o;
  const Floats x = random_floats(x_size), w = random_floats(w_size), bias = random_floats(s.o);
  const Floats dy = random_floats(y_size);

  for (bool with_bias : {false, true}) {
    Floats y(y_size);
    Doubles want(y_size);
    conv2d_forward(s, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data());
    ref::conv2d_forward(s, to_double(x).data(), to_double(w).data(), with_bias ? to_double(bias).data() : nullptr,
                        want.data());
    EXPECT_LT(relative_error(y, want), kTolerance) << "forward, bias " << with_bias;
  }

  Floats dx(x_size, 42.0f);  // garbage: kernels overwrite
  Doubles want_dx(x_size);
  conv2d_backward_data(s, dy.data(), w.data(), dx.data());
  ref::conv2d_backward_data(s, to_double(dy).data(), to_double(w).data(), want_dx.data());
  EXPECT_LT(relative_error(dx, want_dx), kTolerance) << "backward data";

  for (bool with_bias : {false, true}) {
    Floats dw(w_size, 42.0f), dbias(s.o, 42.0f);
    Doubles want_dw(w_size), want_dbias(s.o);
    conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), with_bias ? dbias.data() : nullptr);
    ref::conv2d_backward_weights(s, to_double(x).data(), to_double(dy).data(), want_dw.data(), want_dbias.data());
    EXPECT_LT(relative_error(dw, want_dw), kTolerance) << "backward weights, bias " << with_bias;
    if (with_bias) {
      EXPECT_LT(relative_error(dbias, want_dbias), kTolerance) << "backward bias";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvTest, testing::ValuesIn(kConvShapes));

// --- pooling ---

// n, h, w, c, kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, kind (replaced per test)
const Pool2dShape kPoolShapes[] = {
    {2, 8, 8, 3, 2, 2, 2, 2, 0, 0, 0, 0, PoolKind::max},   // 2x2 stride 2
    {1, 7, 9, 5, 2, 2, 2, 2, 0, 0, 0, 0, PoolKind::max},   // 2x2 stride 2 valid on odd sizes: last row/column dropped
    {1, 7, 9, 5, 2, 2, 2, 2, 0, 0, 1, 1, PoolKind::max},   // 2x2 stride 2 TF SAME on odd sizes: bottom/right padding
    {2, 9, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, PoolKind::max},   // 3x3 stride 2 padded
    {1, 8, 8, 16, 3, 3, 2, 2, 0, 0, 1, 1, PoolKind::max},  // 3x3 stride 2 TF SAME: top 0, bottom 1
    {2, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, PoolKind::max},   // 3x3 stride 1 same
    {1, 4, 4, 2, 1, 1, 1, 1, 0, 0, 0, 0, PoolKind::max},   // 1x1
    {64, 26, 26, 32, 2, 2, 2, 2, 0, 0, 0, 0, PoolKind::max},  // after the tutorial conv
};

class PoolTest : public testing::TestWithParam<std::tuple<Pool2dShape, PoolKind>> {};

TEST_P(PoolTest, MatchesReference) {
  RandomFloats random_floats;
  Pool2dShape s = std::get<0>(GetParam());
  s.kind = std::get<1>(GetParam());
  const int64_t x_size = s.n * s.h * s.w * s.c, y_size = s.n * s.out_h() * s.out_w() * s.c;
  const Floats x = random_floats(x_size), dy = random_floats(y_size);

  EXPECT_EQ(pool2d_workspace_bytes(s) > 0, s.kind == PoolKind::max);
  std::vector<char> workspace(pool2d_workspace_bytes(s));
  Floats y(y_size);
  Doubles want(y_size);
  pool2d_forward(s, x.data(), y.data(), workspace.data());
  ref::pool2d_forward(s, to_double(x).data(), want.data());
  EXPECT_LT(relative_error(y, want), kTolerance) << "forward";

  Floats dx(x_size, 42.0f);
  Doubles want_dx(x_size);
  pool2d_backward(s, dy.data(), workspace.data(), dx.data());
  ref::pool2d_backward(s, to_double(x).data(), to_double(dy).data(), want_dx.data());
  EXPECT_LT(relative_error(dx, want_dx), kTolerance) << "backward";
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolTest,
                         testing::Combine(testing::ValuesIn(kPoolShapes),
                                          testing::Values(PoolKind::max, PoolKind::avg)));

// --- matmul ---

// Every size with every transpose combination and, for batch > 1, every sharing of the operands.
std::vector<MatmulShape> matmul_shapes() {
  struct Size {
    int64_t batch, m, n, k;
  };
  const Size sizes[] = {{1, 1, 1, 1},   {1, 1, 7, 5},     {1, 6, 1, 5},     {1, 6, 7, 1},
                        {3, 17, 9, 33}, {2, 64, 10, 128}, {1, 65, 129, 31}, {4, 1, 5, 3},
                        {1, 4099, 5, 259}};  // a transposed A this large is transposed into a buffer first
  std::vector<MatmulShape> shapes;
  for (const Size& z : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool share_a : {false, true})
          for (bool share_b : {false, true}) {
            if (z.batch == 1 && (share_a || share_b)) continue;
            shapes.push_back({z.batch, z.m, z.n, z.k, ta, tb, share_a ? 0 : z.m * z.k, share_b ? 0 : z.k * z.n});
          }
  return shapes;
}

class MatmulTest : public testing::TestWithParam<MatmulShape> {};

TEST_P(MatmulTest, MatchesReference) {
  RandomFloats random_floats;
  const MatmulShape& s = GetParam();
  const Floats a = random_floats((s.a_batch_stride == 0 ? 1 : s.batch) * s.m * s.k);
  const Floats b = random_floats((s.b_batch_stride == 0 ? 1 : s.batch) * s.k * s.n);
  Floats c(s.batch * s.m * s.n, 42.0f);
  Doubles want(c.size());
  matmul(s, a.data(), b.data(), c.data());
  ref::matmul(s, to_double(a).data(), to_double(b).data(), want.data());
  EXPECT_LT(relative_error(c, want), kTolerance);
}

// bfloat16 operands (oneDNN's bfloat16 kernels where the CPU has them, widened to float32 elsewhere) against the
// float64 product of the same rounded values: products of bfloat16 numbers are exact, the sums round in float32,
// and the result once more to bfloat16 (a relative error of at most 2^-9 each).
TEST_P(MatmulTest, Bfloat16OperandsMatchTheReference) {
  RandomFloats random_floats;
  const MatmulShape& s = GetParam();
  auto rounded = [](const Floats& x) {
    std::vector<bfloat16> r(x.size());
    std::transform(x.begin(), x.end(), r.begin(), [](float v) { return bfloat16(v); });
    return r;
  };
  auto widened = [](const std::vector<bfloat16>& x) {
    Doubles r(x.size());
    std::transform(x.begin(), x.end(), r.begin(), [](bfloat16 v) { return static_cast<double>(static_cast<float>(v)); });
    return r;
  };
  const std::vector<bfloat16> a = rounded(random_floats((s.a_batch_stride == 0 ? 1 : s.batch) * s.m * s.k));
  const std::vector<bfloat16> b = rounded(random_floats((s.b_batch_stride == 0 ? 1 : s.batch) * s.k * s.n));
  std::vector<bfloat16> c(static_cast<size_t>(s.batch * s.m * s.n), bfloat16(42.0f));
  Doubles want(c.size());
  matmul(s, a.data(), b.data(), c.data());
  ref::matmul(s, widened(a).data(), widened(b).data(), want.data());
  Floats got(c.size());
  std::transform(c.begin(), c.end(), got.begin(), [](bfloat16 v) { return static_cast<float>(v); });
  EXPECT_LT(relative_error(got, want), 4e-3) << (has_bfloat16_matmul() ? "oneDNN bf16" : "widened");
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTest, testing::ValuesIn(matmul_shapes()));

// The transpose of a large A runs on the OpenMP threads: they must write the caller's buffer.
TEST(MatmulThreads, LargeTransposedAOnTwoThreadsMatchesTheReference) {
  RandomFloats random_floats;
  const MatmulShape s{1, 4099, 5, 259, true, false, 4099 * 259, 259 * 5};
  const Floats a = random_floats(s.m * s.k), b = random_floats(s.k * s.n);
  Floats c(s.m * s.n, 42.0f);
  Doubles want(c.size());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  matmul(s, a.data(), b.data(), c.data());
  omp_set_num_threads(saved);
  ref::matmul(s, to_double(a).data(), to_double(b).data(), want.data());
  EXPECT_LT(relative_error(c, want), kTolerance);
}

// --- softmax ---

class SoftmaxTest : public testing::TestWithParam<std::tuple<std::pair<int64_t, int64_t>, bool>> {};

TEST_P(SoftmaxTest, MatchesReference) {
  RandomFloats random_floats;
  const auto [rows, cols] = std::get<0>(GetParam());
  const bool log = std::get<1>(GetParam());
  const Floats x = random_floats(rows * cols, -5, 5), dy = random_floats(rows * cols);
  Floats y(rows * cols);
  Doubles want(y.size());
  softmax_forward(rows, cols, x.data(), y.data(), log);
  ref::softmax_forward(rows, cols, to_double(x).data(), want.data(), log);
  EXPECT_LT(relative_error(y, want), kTolerance) << "forward";

  // Both backward passes start from the same (oneDNN) forward output.
  Floats dx(y.size(), 42.0f);
  Doubles want_dx(y.size());
  softmax_backward(rows, cols, y.data(), dy.data(), dx.data(), log);
  ref::softmax_backward(rows, cols, to_double(y).data(), to_double(dy).data(), want_dx.data(), log);
  EXPECT_LT(relative_error(dx, want_dx), kTolerance) << "backward";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SoftmaxTest,
    testing::Combine(testing::Values(std::pair<int64_t, int64_t>{1, 1}, std::pair<int64_t, int64_t>{1, 10},
                                     std::pair<int64_t, int64_t>{64, 10}, std::pair<int64_t, int64_t>{3, 17},
                                     std::pair<int64_t, int64_t>{7, 1000}),
                     testing::Bool()));

// --- eltwise ---

TEST(EltwiseTest, MatchesStd) {
  RandomFloats random_floats;
  const std::pair<Eltwise, std::function<double(double)>> kinds[] = {
      {Eltwise::relu, [](double v) { return std::max(v, 0.0); }},
      {Eltwise::tanh, [](double v) { return std::tanh(v); }},
      {Eltwise::sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {Eltwise::exp, [](double v) { return std::exp(v); }},
      {Eltwise::log, [](double v) { return std::log(v); }},
      {Eltwise::sqrt, [](double v) { return std::sqrt(v); }},
  };
  for (const auto& [kind, f] : kinds)
    for (int64_t n : {1, 17, 1000}) {
      const bool positive = kind == Eltwise::log || kind == Eltwise::sqrt;
      const Floats x = positive ? random_floats(n, 0.1f, 4.0f) : random_floats(n, -4.0f, 4.0f);
      Floats y(n);
      Doubles want(n);
      eltwise_forward(kind, n, x.data(), y.data());
      std::transform(x.begin(), x.end(), want.begin(), [&](float v) { return f(v); });
      EXPECT_LT(relative_error(y, want), kTolerance) << "kind " << static_cast<int>(kind) << " n " << n;
    }
}

// --- the primitive cache ---

TEST(PrimitiveCacheTest, SecondCallCreatesNoPrimitiveAndNewShapesDo) {
  const Conv2dShape conv{2, 10, 11, 3, 3, 3, 5, 1, 1, 1, 1, 1, 1};
  const Pool2dShape pool{2, 10, 11, 3, 2, 2, 2, 2, 0, 0, 0, 1, PoolKind::max};
  const MatmulShape mm{2, 13, 14, 15, false, true, 13 * 15, 0};
  Floats x(2 * 10 * 11 * 3), w(3 * 3 * 3 * 5), b(5), y(2 * 10 * 11 * 5), big(2 * 13 * 15 * 14);
  std::vector<char> workspace(pool2d_workspace_bytes(pool));
  auto run_all = [&] {
    conv2d_forward(conv, x.data(), w.data(), b.data(), y.data());
    conv2d_backward_data(conv, y.data(), w.data(), x.data());
    conv2d_backward_weights(conv, x.data(), y.data(), w.data(), b.data());
    pool2d_forward(pool, x.data(), y.data(), workspace.data());
    pool2d_backward(pool, y.data(), workspace.data(), x.data());
    matmul(mm, big.data(), big.data(), y.data());
    softmax_forward(13, 29, big.data(), y.data(), true);
    softmax_backward(13, 29, big.data(), big.data(), y.data(), false);
    eltwise_forward(Eltwise::tanh, 123, x.data(), y.data());
  };
  run_all();
  const int64_t after_first = primitives_created();
  run_all();
  EXPECT_EQ(primitives_created(), after_first);

  // A size no call has used yet, even when the test is repeated.
  static int64_t fresh_size = 5000;
  const Floats v(++fresh_size);
  Floats out(v.size());
  eltwise_forward(Eltwise::relu, fresh_size, v.data(), out.data());
  EXPECT_GT(primitives_created(), after_first);
}

TEST(PrimitiveCacheTest, ThreadsRunTheSameShapeAtOnce) {
  // Replicas of the local collective backend are threads running the same shapes with different data; each
  // must get its own result although the filter reorder uses a buffer the plan owns.
  RandomFloats random_floats;
  const Conv2dShape s{4, 12, 12, 8, 3, 3, 16, 1, 1, 1, 1, 1, 1};
  const int64_t x_size = s.n * s.h * s.w * s.c, w_size = s.kh * s.kw * s.c * s.o, y_size = x_size / s.c * s.o;
  constexpr int kThreads = 4;
  std::vector<Floats> x, w;
  std::vector<Doubles> want(kThreads, Doubles(y_size));
  for (int t = 0; t < kThreads; ++t) {
    x.push_back(random_floats(x_size));
    w.push_back(random_floats(w_size));
    ref::conv2d_forward(s, to_double(x[t]).data(), to_double(w[t]).data(), static_cast<const double*>(nullptr),
                        want[t].data());
  }
  std::vector<double> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Floats y(y_size);
      double worst = 0;
      for (int i = 0; i < 50; ++i) {
        conv2d_forward(s, x[t].data(), w[t].data(), nullptr, y.data());
        worst = std::max(worst, relative_error(y, want[t]));
      }
      errors[t] = worst;
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_LT(errors[t], kTolerance) << "thread " << t;
}

TEST(PrimitiveCacheTest, ImpossibleShapeThrowsLockstepError) {
  // A filter with no rows; the buffers are large so that a kernel accepting it could not write out of bounds.
  const Conv2dShape s{1, 4, 4, 1, 0, 3, 1, 1, 1, 0, 0, 0, 0};
  Floats x(1000), w(1000), y(1000);
  try {
    conv2d_forward(s, x.data(), w.data(), nullptr, y.data());
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_forward"), std::string::npos) << e.what();
  }
}

// --- the reference kernels on cases computed by hand ---

TEST(ReferenceTest, ConvOnAHandComputedCase) {
  // x = [1 2 3; 4 5 6; 7 8 9], filter [1 2; 3 4], valid, stride 1: four 2x2 dot products.
  const Conv2dShape s{1, 3, 3, 1, 2, 2, 1, 1, 1, 0, 0, 0, 0};
  const double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[] = {1, 2, 3, 4}, bias[] = {1}, ones[] = {1, 1, 1, 1};
  double y[4], dx[9], dw[4], dbias[1];
  ref::conv2d_forward(s, x, w, bias, y);
  EXPECT_EQ(std::vector<double>(y, y + 4), (std::vector<double>{38, 48, 68, 78}));
  // dy = ones: each input collects the filter taps that touched it.
  ref::conv2d_backward_data(s, ones, w, dx);
  EXPECT_EQ(std::vector<double>(dx, dx + 9), (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // dy = ones: each tap collects the inputs it touched.
  ref::conv2d_backward_weights(s, x, ones, dw, dbias);
  EXPECT_EQ(std::vector<double>(dw, dw + 4), (std::vector<double>{12, 16, 24, 28}));
  EXPECT_EQ(dbias[0], 4);
}

TEST(ReferenceTest, ConvWithPaddingAndStride) {
  // x = [1 2; 3 4], 1x1 filter 2, stride 2, padding top 1 / left 1: outputs at (-1,-1) = 0 and (1,1) = 2 * 4.
  const Conv2dShape s{1, 2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 0, 0};
  const float x[] = {1, 2, 3, 4}, w[] = {2};
  float y[4];
  ASSERT_EQ(s.out_h(), 2);
  ref::conv2d_forward(s, x, w, static_cast<const float*>(nullptr), y);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{0, 0, 0, 8}));
}

TEST(ReferenceTest, PoolOnAHandComputedCase) {
  // x = [1 2 3; 4 5 6; 7 8 9], 2x2 stride 2, TF SAME (bottom/right padding 1).
  Pool2dShape s{1, 3, 3, 1, 2, 2, 2, 2, 0, 0, 1, 1, PoolKind::max};
  const double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, dy[] = {1, 2, 3, 4};
  double y[4], dx[9];
  ref::pool2d_forward(s, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 4), (std::vector<double>{5, 6, 8, 9}));
  ref::pool2d_backward(s, x, dy, dx);
  EXPECT_EQ(std::vector<double>(dx, dx + 9), (std::vector<double>{0, 0, 0, 0, 1, 2, 0, 3, 4}));

  // Average pooling divides by the inputs inside the image: (3 + 6) / 2, not / 4.
  s.kind = PoolKind::avg;
  ref::pool2d_forward(s, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 4), (std::vector<double>{3, 4.5, 7.5, 9}));
  ref::pool2d_backward(s, x, dy, dx);
  EXPECT_EQ(std::vector<double>(dx, dx + 9), (std::vector<double>{0.25, 0.25, 1, 0.25, 0.25, 1, 1.5, 1.5, 4}));
}

TEST(PoolTest, MaxTiesGoToTheFirstMaximum) {
  // Equal inputs: TF, the reference and oneDNN all route the gradient to the window's first element.
  const Pool2dShape s{1, 2, 2, 1, 2, 2, 2, 2, 0, 0, 0, 0, PoolKind::max};
  const float x[] = {7, 7, 7, 7}, dy[] = {1};
  float ref_dx[4], dx[4], y[1];
  ref::pool2d_backward(s, x, dy, ref_dx);
  EXPECT_EQ(std::vector<float>(ref_dx, ref_dx + 4), (std::vector<float>{1, 0, 0, 0}));
  std::vector<char> workspace(pool2d_workspace_bytes(s));
  pool2d_forward(s, x, y, workspace.data());
  pool2d_backward(s, dy, workspace.data(), dx);
  EXPECT_EQ(std::vector<float>(dx, dx + 4), (std::vector<float>{1, 0, 0, 0}));
}

TEST(ReferenceTest, MatmulOnAHandComputedCase) {
  const double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  double c[4];
  ref::matmul(MatmulShape{1, 2, 2, 2, false, false, 4, 4}, a, b, c);
  EXPECT_EQ(std::vector<double>(c, c + 4), (std::vector<double>{19, 22, 43, 50}));
  ref::matmul(MatmulShape{1, 2, 2, 2, true, false, 4, 4}, a, b, c);  // [1 3; 2 4] @ b
  EXPECT_EQ(std::vector<double>(c, c + 4), (std::vector<double>{26, 30, 38, 44}));
  ref::matmul(MatmulShape{1, 2, 2, 2, false, true, 4, 4}, a, b, c);  // a @ [5 7; 6 8]
  EXPECT_EQ(std::vector<double>(c, c + 4), (std::vector<double>{17, 23, 39, 53}));
}

TEST(ReferenceTest, SoftmaxOnAHandComputedCase) {
  // softmax([0, ln 3]) = [1/4, 3/4]; with dy = [1, 0]: dx = y * (dy - y . dy) = [3/16, -3/16].
  const double x[] = {0, std::log(3.0)}, dy[] = {1, 0};
  double y[2], dx[2];
  ref::softmax_forward(1, 2, x, y, false);
  EXPECT_NEAR(y[0], 0.25, 1e-12);
  EXPECT_NEAR(y[1], 0.75, 1e-12);
  ref::softmax_backward(1, 2, y, dy, dx, false);
  EXPECT_NEAR(dx[0], 0.1875, 1e-12);
  EXPECT_NEAR(dx[1], -0.1875, 1e-12);
  // log-softmax: y = log([1/4, 3/4]); dx = dy - softmax * sum(dy) = [3/4, -3/4].
  ref::softmax_forward(1, 2, x, y, true);
  EXPECT_NEAR(y[0], std::log(0.25), 1e-12);
  EXPECT_NEAR(y[1], std::log(0.75), 1e-12);
  ref::softmax_backward(1, 2, y, dy, dx, true);
  EXPECT_NEAR(dx[0], 0.75, 1e-12);
  EXPECT_NEAR(dx[1], -0.75, 1e-12);
}

}  // namespace
}  // namespace lockstep::kernels::cpu
