// Shape arithmetic and NumPy broadcasting rules.
#include "lockstep/core/shape.h"

#include <gtest/gtest.h>

#include "lockstep/core/error.h"

namespace lockstep {
namespace {

TEST(Shape, Basics) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s[-1], 4);
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(s.str(), "(2, 3, 4)");
  EXPECT_EQ(Shape{5}.str(), "(5,)");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_THROW(s.normalize_axis(3), ValueError);
  EXPECT_EQ(s.normalize_axis(-3), 0);
}

TEST(Shape, Broadcasting) {
  EXPECT_EQ(broadcast_shapes({4, 1, 3}, {5, 1}), (Shape{4, 5, 3}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({1}, {0}), (Shape{0}));
  try {
    broadcast_shapes({2, 3}, {4});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3)"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("(4,)"), std::string::npos);
  }
}

}  // namespace
}  // namespace lockstep
