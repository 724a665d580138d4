// Tensor storage, views, copies, printing, factories and the caching allocator.
#include "lockstep/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "lockstep/core/philox.h"
#include "lockstep/tensor/ops.h"

namespace lockstep {
namespace {

TEST(Tensor, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty({n}, DType::uint8);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

TEST(Tensor, AllocatorReusesFreedBlocks) {
  allocator_release_cached();
  { Tensor warm = Tensor::empty({123, 45}, DType::float32); }
  AllocatorStats before = allocator_stats();
  { Tensor again = Tensor::empty({123, 45}, DType::float32); }
  AllocatorStats after = allocator_stats();
  EXPECT_EQ(after.allocations - before.allocations, 1);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 1);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
}

TEST(Tensor, ReshapeSliceAndTransposeAreViews) {
  Tensor x = arange(0, 12, 1, DType::float32);
  Tensor r = raw_ops::reshape(x, {3, 4});
  EXPECT_EQ(r.storage(), x.storage());
  Tensor s = raw_ops::slice(r, {1, 1}, {2, 2});
  EXPECT_EQ(s.storage(), x.storage());
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{5, 6, 9, 10}));
  Tensor t = raw_ops::transpose(r, {1, 0});
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_EQ(t.contiguous().to_vector<float>()[1], 4.0f);
  EXPECT_NE(t.id(), r.id());
  // A reshape of a non-contiguous view copies.
  Tensor tr = raw_ops::reshape(t, {12});
  EXPECT_NE(tr.storage(), x.storage());
  EXPECT_EQ(tr.to_vector<float>()[1], 4.0f);
}

TEST(Tensor, CopyFromWritesIntoAStridedView) {
  Tensor x = zeros({3, 4});
  raw_ops::slice(x, {0, 1}, {3, 2}).copy_from(ones({3, 2}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}));
  EXPECT_THROW(x.copy_from(ones({2, 2})), InvalidArgumentError);
}

TEST(Tensor, PrintsLikeTensorFlow) {
  EXPECT_EQ(from_vector<float>({1, 2.5}, {2}).str(), "tf.Tensor([1. 2.5], shape=(2,), dtype=float32)");
  EXPECT_EQ(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}).str(), "tf.Tensor([[1 2]\n [3 4]], shape=(2, 2), dtype=int64)");
  EXPECT_EQ(scalar(1, DType::bool_).str(), "tf.Tensor(True, shape=(), dtype=bool)");
}

TEST(Tensor, WrongTypeAccessAndUndefinedUseAreErrors) {
  Tensor x = zeros({2});
  EXPECT_THROW(x.data<double>(), InvalidArgumentError);
  EXPECT_THROW(Tensor().shape(), InvalidArgumentError);
  EXPECT_THROW(x.item<float>(), InvalidArgumentError);
}

TEST(Tensor, ErrorsNameShapesAndDtypes) {
  try {
    raw_ops::matmul(zeros({2, 3}), zeros({4, 5}));
    FAIL();
  } catch (const InvalidArgumentError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4, 5)"), std::string::npos) << m;
  }
  try {
    raw_ops::binary(raw_ops::BinaryOp::add, zeros({2}), zeros({2}, DType::int32));
    FAIL();
  } catch (const InvalidArgumentError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("float32"), std::string::npos) << m;
    EXPECT_NE(m.find("int32"), std::string::npos) << m;
  }
  EXPECT_THROW(raw_ops::reshape(zeros({2, 3}), {4, -1}), InvalidArgumentError);
  EXPECT_THROW(raw_ops::sparse_softmax_cross_entropy_with_logits(from_vector<int64_t>({0, 5}, {2}), zeros({2, 5})),
               InvalidArgumentError);
  EXPECT_THROW(raw_ops::conv2d(zeros({1, 2, 2, 1}), zeros({3, 3, 1, 1}), Tensor(), {}), InvalidArgumentError);
  EXPECT_THROW(raw_ops::gather(zeros({3, 2}), from_vector<int64_t>({3}, {1})), InvalidArgumentError);
}

TEST(Factories, ConstantsAndRanges) {
  EXPECT_EQ(full({2}, 1.5, DType::float64).to_vector<double>(), (std::vector<double>{1.5, 1.5}));
  EXPECT_EQ(arange(1, 7, 2).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(arange(0, 1, 0.25, DType::float32).numel(), 4);
  EXPECT_EQ(ones({2, 2}, DType::bool_).to_vector<int>(), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_THROW(from_vector<float>({1, 2, 3}, {2, 2}), InvalidArgumentError);
}

TEST(Factories, RandomTensorsAreReproducibleFromTheGeneratorState) {
  Philox a(5), b(5);
  Tensor x = random_uniform({100}, a), y = random_uniform({100}, b);
  EXPECT_EQ(x.to_vector<float>(), y.to_vector<float>());
  Philox c(5);
  c.skip(a.state().position);  // continue where `a` stopped, as a resumed run does
  EXPECT_EQ(random_normal({10}, a).to_vector<float>(), random_normal({10}, c).to_vector<float>());
  Philox d(1);
  for (float v : truncated_normal({1000}, d, 0, 0.5).to_vector<float>()) ASSERT_LE(std::abs(v), 1.0f);
  EXPECT_THROW(random_uniform({2}, d, 0, 1, DType::int32), InvalidArgumentError);
}

TEST(Ops, IntegerAndBoolArithmetic) {
  Tensor a = from_vector<int64_t>({1, -2, 3}, {3});
  EXPECT_EQ(raw_ops::binary(raw_ops::BinaryOp::mul, a, a).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 9}));
  EXPECT_EQ(raw_ops::sum(a).item<int64_t>(), 2);
  EXPECT_EQ(raw_ops::mean(from_vector<int32_t>({1, 2}, {2})).item<int32_t>(), 1);  // integer means truncate
  EXPECT_EQ(raw_ops::unary(raw_ops::UnaryOp::abs, a).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_THROW(raw_ops::unary(raw_ops::UnaryOp::exp, a), InvalidArgumentError);
  Tensor t = from_vector<bool>({true, false}, {2});
  EXPECT_EQ(raw_ops::unary(raw_ops::UnaryOp::logical_not, t).to_vector<int>(), (std::vector<int>{0, 1}));
}

TEST(Ops, Bfloat16ComputesThroughFloat32) {
  Tensor a = raw_ops::cast(from_vector<float>({1.5f, 2.0f}, {2}), DType::bfloat16);
  Tensor s = raw_ops::binary(raw_ops::BinaryOp::add, a, a);
  EXPECT_EQ(s.dtype(), DType::bfloat16);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(raw_ops::matmul(raw_ops::reshape(a, {1, 2}), raw_ops::reshape(a, {2, 1})).to_vector<float>()[0], 6.25f);
}

// Every elementwise op on bfloat16 gives the float32 op on the widened values, rounded once: over broadcast and
// strided (transposed) operands, with the comparisons giving bool.
TEST(Ops, Bfloat16ElementwiseOpsRoundTheFloat32Result) {
  using raw_ops::BinaryOp;
  using raw_ops::UnaryOp;
  Philox rng(9);
  const Tensor a32 = raw_ops::cast(raw_ops::cast(random_normal({4, 33}, rng), DType::bfloat16), DType::float32);
  const Tensor b32 = raw_ops::cast(raw_ops::cast(random_uniform({33, 4}, rng, 0.5, 2), DType::bfloat16), DType::float32);
  const Tensor a = raw_ops::cast(a32, DType::bfloat16), b = raw_ops::cast(b32, DType::bfloat16);
  const Tensor bt = raw_ops::transpose(b, {1, 0}), bt32 = raw_ops::transpose(b32, {1, 0});  // strided views [4, 33]
  auto expect_rounded = [](const Tensor& got, const Tensor& want32, const std::string& what) {
    if (want32.dtype() == DType::bool_) {
      ASSERT_EQ(got.dtype(), DType::bool_) << what;
      EXPECT_EQ(got.to_vector<int>(), want32.to_vector<int>()) << what;
      return;
    }
    ASSERT_EQ(got.dtype(), DType::bfloat16) << what;
    const std::vector<float> g = got.to_vector<float>(), w = raw_ops::cast(want32, DType::bfloat16).to_vector<float>();
    ASSERT_EQ(g.size(), w.size()) << what;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(g[i]) && std::isnan(w[i])) continue;
      EXPECT_EQ(g[i], w[i]) << what << " at " << i;
    }
  };
  for (int op = 0; op <= static_cast<int>(BinaryOp::logical_or); ++op) {
    const auto o = static_cast<BinaryOp>(op);
    const std::string name = "binary op " + std::to_string(op);
    expect_rounded(raw_ops::binary(o, a, bt), raw_ops::binary(o, a32, bt32), name);
    expect_rounded(raw_ops::binary(o, a, raw_ops::slice(bt, {0, 0}, {1, 33})),
                   raw_ops::binary(o, a32, raw_ops::slice(bt32, {0, 0}, {1, 33})), name + " broadcast");
  }
  for (int op = 0; op < static_cast<int>(UnaryOp::logical_not); ++op) {
    const auto o = static_cast<UnaryOp>(op);
    const Tensor x = op == static_cast<int>(UnaryOp::log) || op == static_cast<int>(UnaryOp::sqrt) ||
                             op == static_cast<int>(UnaryOp::rsqrt) ? bt : a;
    expect_rounded(raw_ops::unary(o, x), raw_ops::unary(o, raw_ops::cast(x, DType::float32)),
                   "unary op " + std::to_string(op));
  }
}

}  // namespace
}  // namespace lockstep
