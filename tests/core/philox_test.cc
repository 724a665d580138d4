// Philox4x32-10 against Random123's known-answer vectors, plus stream, skip-ahead and distribution checks.
#include "lockstep/core/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lockstep {
namespace {

TEST(Philox, KnownAnswers) {
  using B = std::array<uint32_t, 4>;
  EXPECT_EQ(Philox::block(0, 0, 0), (B{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox::block(~0ull, ~0ull, ~0ull), (B{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  // counter (243f6a88 85a308d3 13198a2e 03707344), key (a4093822 299f31d0): the digits of pi.
  EXPECT_EQ(Philox::block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull),
            (B{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, SameSeedSameStreamOnEveryInstance) {
  Philox a(42), b(42), c(43), d(42, 1);
  std::vector<uint32_t> va, vb, vc, vd;
  for (int i = 0; i < 10; ++i) va.push_back(a.next_u32()), vb.push_back(b.next_u32()), vc.push_back(c.next_u32()),
      vd.push_back(d.next_u32());
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_NE(va, vd);
}

TEST(Philox, SkipAheadContinuesTheExactStream) {
  Philox full(7);
  std::vector<uint32_t> all;
  for (int i = 0; i < 1003; ++i) all.push_back(full.next_u32());
  Philox skipped(7);
  skipped.skip(997);
  for (int i = 997; i < 1003; ++i) EXPECT_EQ(skipped.next_u32(), all[static_cast<size_t>(i)]);
  // Restoring a saved state continues where it was saved.
  Philox saved(7);
  for (int i = 0; i < 5; ++i) saved.next_u32();
  Philox restored(saved.state());
  EXPECT_EQ(restored.next_u32(), all[5]);
}

TEST(Philox, DistributionsHaveTheRightMoments) {
  Philox rng(3);
  const int n = 200000;
  std::vector<double> u(n), z(n), t(n);
  rng.fill_uniform(u.data(), n, -1.0, 3.0);
  rng.fill_normal(z.data(), n, 1.0, 2.0);
  rng.fill_truncated_normal(t.data(), n, 0.0, 1.0);
  auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / static_cast<double>(v.size()); };
  auto var = [&](const std::vector<double>& v) { double m = mean(v), s = 0; for (double x : v) s += (x - m) * (x - m); return s / static_cast<double>(v.size()); };
  EXPECT_NEAR(mean(u), 1.0, 0.02);
  EXPECT_NEAR(var(u), 16.0 / 12.0, 0.02);
  EXPECT_NEAR(mean(z), 1.0, 0.02);
  EXPECT_NEAR(var(z), 4.0, 0.05);
  for (double x : u) ASSERT_TRUE(x >= -1.0 && x < 3.0);
  for (double x : t) ASSERT_LE(std::abs(x), 2.0);
  EXPECT_NEAR(var(t), 0.7737, 0.01);  // variance of a standard normal truncated to [-2, 2]
}

}  // namespace
}  // namespace lockstep
