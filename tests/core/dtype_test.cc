// DType names and sizes, bfloat16 rounding.
#include "lockstep/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lockstep/core/error.h"

namespace lockstep {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::float32, DType::bfloat16, DType::float64, DType::int64, DType::int32, DType::uint8, DType::bool_})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_size(DType::bfloat16), 2u);
  EXPECT_EQ(dtype_size(DType::float64), 8u);
  EXPECT_EQ(dtype_size(DType::bool_), 1u);
}

TEST(DType, UnknownNameListsTheValidOnes) {
  try {
    dtype_from_name("float16");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos);
  }
}

TEST(DType, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(bfloat16(-2.5f)), -2.5f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa, 1.
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 0x1p-8f + 0x1p-10f)), 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(static_cast<float>(bfloat16(INFINITY))));
}

}  // namespace
}  // namespace lockstep
