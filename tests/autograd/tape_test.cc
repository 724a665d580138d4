// GradientTape semantics as in TF: watching, persistence, nesting, stop_gradient, no-grad, accumulation,
// variables and their gradient-ready hooks.
#include "lockstep/autograd/tape.h"

#include <gtest/gtest.h>

#include "lockstep/autograd/ops.h"

namespace lockstep {
namespace {

Tensor vec(std::vector<double> v) { return from_vector(v, Shape{static_cast<int64_t>(v.size())}); }

TEST(GradientTape, ConstantsNeedWatch) {
  Tensor x = scalar(3.0, DType::float64);
  GradientTape tape;
  Tensor y = x * x;
  EXPECT_FALSE(tape.gradient(y, x).defined());  // not watched: TF returns None

  GradientTape watched;
  watched.watch(x);
  Tensor y2 = x * x;
  EXPECT_DOUBLE_EQ(watched.gradient(y2, x).item<double>(), 6.0);
}

TEST(GradientTape, NonPersistentTapeRefusesASecondGradient) {
  Tensor x = scalar(2.0, DType::float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x * x;
  EXPECT_DOUBLE_EQ(tape.gradient(y, x).item<double>(), 12.0);
  try {
    tape.gradient(y, x);
    FAIL() << "second gradient() on a non-persistent tape";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("persistent"), std::string::npos);
  }
}

TEST(GradientTape, PersistentTapeAllowsSeveral) {
  Tensor x = scalar(2.0, DType::float64);
  GradientTape tape({.persistent = true});
  tape.watch(x);
  Tensor y = x * x, z = y * y;
  EXPECT_DOUBLE_EQ(tape.gradient(z, x).item<double>(), 32.0);  // 4x^3
  EXPECT_DOUBLE_EQ(tape.gradient(y, x).item<double>(), 4.0);
}

TEST(GradientTape, NestedTapesGiveSecondDerivatives) {
  Tensor x = scalar(3.0, DType::float64);
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;
    dy = inner.gradient(y, x);  // 3x^2 = 27, recorded by the outer tape
  }
  EXPECT_DOUBLE_EQ(dy.item<double>(), 27.0);
  EXPECT_DOUBLE_EQ(outer.gradient(dy, x).item<double>(), 18.0);  // 6x
}

TEST(GradientTape, GradientsAccumulateOverUses) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(x * 3.0 + x * x + exp(x) * 0.0);
  auto g = tape.gradient(y, x).to_vector<double>();
  EXPECT_DOUBLE_EQ(g[0], 5.0);
  EXPECT_DOUBLE_EQ(g[1], 7.0);
}

TEST(GradientTape, StopGradientAndNoGradGuardBlockGradients) {
  Tensor x = scalar(2.0, DType::float64);
  GradientTape tape({.persistent = true});
  tape.watch(x);
  Tensor y = x * stop_gradient(x);
  EXPECT_DOUBLE_EQ(tape.gradient(y, x).item<double>(), 2.0);
  Tensor z;
  {
    NoGradGuard no_grad;
    z = x * x;
  }
  EXPECT_FALSE(tape.gradient(z, x).defined());
  Tensor w;
  {
    auto pause = tape.stop_recording();
    w = x * x;
  }
  EXPECT_FALSE(tape.gradient(w, x).defined());
}

TEST(GradientTape, OutputGradientSeedsTheBackwardPass) {
  Tensor x = vec({1, 2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  auto g = tape.gradient(y, std::vector<Tensor>{x}, vec({1, 0, -1}))[0].to_vector<double>();
  EXPECT_EQ(g, (std::vector<double>{2, 0, -6}));
}

TEST(Variable, TrainableVariablesAreWatchedWhenRead) {
  Variable w(vec({1, 2}), {.name = "w"});
  Variable frozen(vec({3, 4}), {.name = "frozen", .trainable = false});
  GradientTape tape;
  Tensor loss = reduce_sum(w * frozen);
  auto g = tape.gradient(loss, std::vector<Variable>{w, frozen});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{3, 4}));
  EXPECT_FALSE(g[1].defined());
}

TEST(Variable, AssignKeepsIdentityAndChecksShape) {
  Variable v(vec({1, 2}));
  int64_t id = v.value().id();
  v.assign_sub(vec({0.5, 0.5}));
  EXPECT_EQ(v.value().id(), id);
  EXPECT_EQ(v.value().to_vector<double>(), (std::vector<double>{0.5, 1.5}));
  EXPECT_THROW(v.assign(vec({1, 2, 3})), InvalidArgumentError);
  EXPECT_NE(Variable(vec({1})).unique_id(), v.unique_id());
}

TEST(Variable, HooksFireOnceWhenEachGradientIsFinal) {
  // Two layers: the last layer's gradient is final first, so its hook runs first (as all-reduce wants).
  Variable w1(vec({1, 2}), {.name = "w1"}), w2(vec({3, 4}), {.name = "w2"});
  std::vector<std::string> order;
  std::vector<double> seen;
  for (const Variable& v : {w1, w2})
    v.add_gradient_hook([&](const Variable& var, const Tensor& g) {
      order.push_back(var.name());
      seen.push_back(reduce_sum(g).item<double>());
    });
  GradientTape tape;
  Tensor h = w1 * 2.0;
  Tensor loss = reduce_sum(h * w2);
  auto grads = tape.gradient(loss, std::vector<Variable>{w1, w2});
  EXPECT_EQ(order, (std::vector<std::string>{"w2", "w1"}));
  EXPECT_DOUBLE_EQ(seen[0], 6.0);   // dL/dw2 = 2 w1 = (2, 4)
  EXPECT_DOUBLE_EQ(seen[1], 14.0);  // dL/dw1 = 2 w2 = (6, 8)
}

TEST(Variable, HookCanChangeTheGradientInPlace) {
  Variable w(vec({1, 2}));
  int handle = w.add_gradient_hook([](const Variable&, const Tensor& g) {
    for (int64_t i = 0; i < g.numel(); ++i) g.data<double>()[i] *= 10;  // what an in-place all-reduce does
  });
  {
    GradientTape tape;
    Tensor loss = reduce_sum(w * 1.0);
    EXPECT_EQ(tape.gradient(loss, std::vector<Variable>{w})[0].to_vector<double>(), (std::vector<double>{10, 10}));
  }
  w.remove_gradient_hook(handle);
  GradientTape tape;
  Tensor loss = reduce_sum(w * 1.0);
  EXPECT_EQ(tape.gradient(loss, std::vector<Variable>{w})[0].to_vector<double>(), (std::vector<double>{1, 1}));
}

// A matrix product's weight gradient, written straight into the variable's gradient destination under
// GradientsToDestinations (the same bits as computed on its own), and only there: not without the scope, and not
// for a variable whose gradient adds up over two uses.
TEST(Variable, GradientGoesIntoItsDestinationOnlyWhenAskedAndComputedAlone) {
  Philox rng(3);
  const Tensor x = random_uniform({4, 3}, rng);
  Variable w(random_uniform({3, 2}, rng)), u(random_uniform({3, 2}, rng));
  Tensor w_place = zeros(Shape{3, 2}, DType::float32), u_place = zeros(Shape{3, 2}, DType::float32);
  int asked = 0;
  w.set_gradient_destination([&](const Variable&) { return ++asked, w_place; });
  u.set_gradient_destination([&](const Variable&) { return u_place; });
  auto loss_of = [&] { return reduce_sum(matmul(x, w) * 2.0f) + reduce_sum(matmul(x, u) + matmul(x, u)); };
  std::vector<Tensor> plain;
  {
    GradientTape tape;
    plain = tape.gradient(loss_of(), std::vector<Variable>{w, u});
  }
  EXPECT_EQ(asked, 0) << "asked for a destination outside GradientsToDestinations";
  std::vector<Tensor> placed;
  {
    GradientTape tape;
    GradientsToDestinations into_destinations;
    placed = tape.gradient(loss_of(), std::vector<Variable>{w, u});
  }
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(placed[0].storage(), w_place.storage()) << "w's gradient was not written into its destination";
  EXPECT_EQ(w_place.to_vector<float>(), plain[0].to_vector<float>());
  EXPECT_NE(placed[1].storage(), u_place.storage()) << "u's gradient adds two products: it has no single writer";
  EXPECT_EQ(u_place.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(placed[1].to_vector<float>(), plain[1].to_vector<float>());
  w.set_gradient_destination({});
  GradientTape tape;
  GradientsToDestinations into_destinations;
  EXPECT_NE(tape.gradient(loss_of(), std::vector<Variable>{w})[0].storage(), w_place.storage());
}

TEST(GradientTape, ImageInputGradientIsNotComputedWhenNotWanted) {
  // Only the filters are watched: conv2d's backward must not be asked for the input's gradient.
  Philox rng(1);
  Tensor x = random_uniform({1, 5, 5, 1}, rng);
  Variable w(random_uniform({3, 3, 1, 2}, rng));
  GradientTape tape;
  Tensor loss = reduce_sum(nn::conv2d(x, w));
  auto g = tape.gradient(loss, std::vector<Tensor>{x, w.value()});
  EXPECT_FALSE(g[0].defined());
  EXPECT_TRUE(g[1].defined());
}

// Variables live on the device of the scope they are made in, and train there: assign and gradients stay on it.
TEST(Variable, IsPlacedOnTheScopesDeviceAndTrainsThere) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible to this process";
  Variable v;
  {
    DeviceScope scope(Device::gpu(0));
    v = Variable(from_vector(std::vector<float>{1, 2, 3}, Shape{3}));
  }
  EXPECT_TRUE(v.value().device().is_gpu());
  GradientTape tape;
  Tensor loss = reduce_sum(square(v.read()));
  Tensor g = tape.gradient(loss, std::vector<Variable>{v})[0];
  EXPECT_TRUE(g.device().is_gpu());
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  v.assign_sub(g);
  EXPECT_TRUE(v.value().device().is_gpu());
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{-1, -2, -3}));
}

}  // namespace
}  // namespace lockstep
