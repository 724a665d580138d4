// Keras' mixed_bfloat16 policy: bfloat16 compute with float32 variables, float32 losses, configs that carry the
// policy, and training that follows the float32 run.
#include "lockstep/keras/mixed_precision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lockstep/autograd/tape.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras {
namespace {

namespace kl = layers;
namespace mp = mixed_precision;

// Each test starts and ends under the default policy, whatever it sets.
class MixedPrecision : public ::testing::Test {
 protected:
  void SetUp() override { mp::set_global_policy("float32"); }
  void TearDown() override { mp::set_global_policy("float32"); }
};

// Values as float32 after rounding to bfloat16.
std::vector<float> rounded(const Tensor& t) {
  return raw_ops::cast(raw_ops::cast(t, DType::bfloat16), DType::float32).to_vector<float>();
}

TEST_F(MixedPrecision, PoliciesNameTheirDtypes) {
  const mp::DTypePolicy mixed("mixed_bfloat16");
  EXPECT_EQ(mixed.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(mixed.variable_dtype(), DType::float32);
  EXPECT_EQ(mp::DTypePolicy().compute_dtype(), DType::float32);
  EXPECT_EQ(mp::global_policy().name(), "float32");
  mp::set_global_policy(mixed);
  EXPECT_EQ(mp::global_policy(), mixed);
  try {
    mp::DTypePolicy("mixed_float16");
    FAIL() << "mixed_float16 was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'mixed_float16'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mixed_bfloat16"), std::string::npos) << e.what();
  }
}

TEST_F(MixedPrecision, DenseComputesInBfloat16AndKeepsFloat32Weights) {
  mp::set_global_policy("mixed_bfloat16");
  kl::Dense dense(3, {.bias_initializer = "ones"});
  Philox rng(3);
  const Tensor x = random_normal({4, 5}, rng);
  const Tensor y = dense(x);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(dense.kernel().dtype(), DType::float32);
  EXPECT_EQ(dense.compute_dtype(), DType::bfloat16);
  // What Keras computes: the float32 product of the rounded input and kernel, rounded, plus the bias, rounded.
  const Tensor xr = from_vector(rounded(x), x.shape()), kr = from_vector(rounded(dense.kernel().value()), {5, 3});
  const Tensor product = from_vector(rounded(raw_ops::matmul(xr, kr)), {4, 3});
  const Tensor expected = raw_ops::binary(raw_ops::BinaryOp::add, product, dense.bias().value());
  EXPECT_EQ(raw_ops::cast(y, DType::float32).to_vector<float>(), rounded(expected));
  // A different value from the float32 layer's: the rounding is real.
  dense.set_dtype_policy("float32");
  const Tensor y32 = dense(x);
  EXPECT_EQ(y32.dtype(), DType::float32);
  EXPECT_NE(y32.to_vector<float>(), raw_ops::cast(y, DType::float32).to_vector<float>());
}

TEST_F(MixedPrecision, GradientsReachTheFloat32VariablesAsFloat32) {
  mp::set_global_policy("mixed_bfloat16");
  Sequential model({Input({6, 6}), kl::Reshape({6, 6, 1}), kl::Conv2D(2, 3, {.activation = "relu"}), kl::MaxPooling2D(),
                    kl::Flatten(), kl::BatchNormalization(), kl::Dense(3)});
  Philox rng(4);
  const Tensor x = random_normal({5, 6, 6}, rng);
  const Tensor labels = from_vector<int64_t>({0, 1, 2, 1, 0}, {5});
  GradientTape tape;
  const Tensor logits = model(x, {.training = true});
  EXPECT_EQ(logits.dtype(), DType::bfloat16);
  const Tensor loss = (*losses::SparseCategoricalCrossentropy({.from_logits = true}))(labels, logits);
  EXPECT_EQ(loss.dtype(), DType::float32);  // losses are computed in float32
  const std::vector<Variable> vars = model.trainable_variables();
  const std::vector<Tensor> grads = tape.gradient(loss, vars);
  ASSERT_EQ(grads.size(), vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(vars[i].dtype(), DType::float32) << vars[i].name();
    ASSERT_TRUE(grads[i].defined()) << vars[i].name();
    EXPECT_EQ(grads[i].dtype(), DType::float32) << vars[i].name();
    double norm = 0;
    for (float g : grads[i].to_vector<float>()) {
      ASSERT_TRUE(std::isfinite(g)) << vars[i].name();
      norm += std::abs(g);
    }
    EXPECT_GT(norm, 0) << vars[i].name();
  }
}

TEST_F(MixedPrecision, ConfigsCarryThePolicyBothWays) {
  mp::set_global_policy("mixed_bfloat16");
  Sequential model({Input({4}), kl::Dense(8, {.activation = "relu"}), kl::Dense(2)});
  model.layers().back()->set_dtype_policy("float32");  // Keras' advice: the output layer in float32
  const nlohmann::json config = model.get_config();
  mp::set_global_policy("float32");
  const Sequential loaded = Sequential::from_config(config);
  EXPECT_EQ(loaded.layers()[0]->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(loaded.layers()[1]->dtype_policy().name(), "float32");
  // Keras 3 writes the policy as a serialised DTypePolicy object.
  nlohmann::json keras3 = config;
  for (nlohmann::json& layer : keras3.at("layers"))
    if (layer["class_name"] == "Dense")
      layer["config"]["dtype"] = {{"module", "keras"}, {"class_name", "DTypePolicy"},
                                  {"config", {{"name", "mixed_bfloat16"}}}, {"registered_name", nullptr}};
  EXPECT_EQ(Sequential::from_config(keras3).layers()[1]->dtype_policy().name(), "mixed_bfloat16");
  keras3.at("layers").back()["config"]["dtype"] = "mixed_float16";
  EXPECT_THROW(Sequential::from_config(keras3), ValueError);
}

// Trains the same small CNN under both policies from the same initial weights.
std::vector<double> train_losses(const std::string& policy) {
  mp::set_global_policy(policy);
  utils::set_random_seed(7);
  Sequential model({Input({8, 8}), kl::Reshape({8, 8, 1}), kl::Conv2D(4, 3, {.activation = "relu"}), kl::MaxPooling2D(),
                    kl::Flatten(), kl::Dense(16, {.activation = "relu"}), kl::Dropout(0.1), kl::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  // Three classes of 8x8 images: a bright left, middle or right band, with noise.
  Philox rng(11);
  const int64_t n = 192;
  const Tensor labels = raw_ops::cast(random_uniform({n}, rng, 0, 3, DType::float64), DType::int64);
  std::vector<float> images = random_normal({n, 8, 8}, rng, 0, 0.3).to_vector<float>();
  const std::vector<int64_t> l = labels.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t c = 0; c < 8; ++c)
        if (c / 3 == l[static_cast<size_t>(i)]) images[static_cast<size_t>((i * 8 + r) * 8 + c)] += 1;
  auto history = model.fit(from_vector(images, {n, 8, 8}), labels, {.epochs = 4, .batch_size = 32, .verbose = 0});
  for (const Variable& v : model.trainable_variables()) EXPECT_EQ(v.dtype(), DType::float32);
  EXPECT_GT(history.history["accuracy"].back(), 0.9) << policy;
  return history.history["loss"];
}

TEST_F(MixedPrecision, TrainsLikeFloat32) {
  const std::vector<double> f32 = train_losses("float32"), bf16 = train_losses("mixed_bfloat16");
  ASSERT_EQ(f32.size(), bf16.size());
  EXPECT_LT(bf16.back(), bf16.front() / 2);
  for (size_t e = 0; e < f32.size(); ++e) EXPECT_NEAR(bf16[e], f32[e], 0.05 + 0.1 * f32[e]) << "epoch " << e;
  EXPECT_NE(f32, bf16);  // the policy changed the arithmetic
}

}  // namespace
}  // namespace lockstep::keras
