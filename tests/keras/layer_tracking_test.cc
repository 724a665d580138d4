// A layer made of other layers (Keras' attribute tracking, Layer::track): the weights, losses, random streams and
// trainable flag of what it tracks are its own, each once, and such a layer trains inside a model as any other.
// Python's Layer and Model subclasses are layers of this kind (python/tests/test_keras_subclass.py).
#include <gtest/gtest.h>

#include "lockstep/keras/model.h"

namespace lockstep::keras {
namespace {

namespace kl = layers;

// relu(x + dense2(dropout(relu(dense1(x))))): a residual block, with its sublayers as members, as a user writes it.
class ResidualBlock : public Layer {
 public:
  explicit ResidualBlock(int64_t width)
      : Layer("ResidualBlock"),
        first_(std::make_shared<kl::Dense>(
            width, kl::DenseOptions{.activation = "relu", .kernel_regularizer = regularizers::L2(0.5)})),
        second_(std::make_shared<kl::Dense>(width)),
        dropout_(std::make_shared<kl::Dropout>(0.25, kl::DropoutOptions{.seed = 7})) {
    track(first_);
    track(dropout_);
    track(second_);
    track(second_);  // twice: still once
    scale_ = Variable(ones(Shape{width}), {.name = name() + "/scale"});
    track(scale_);
  }
  LayerPtr clone() const override { return std::make_shared<ResidualBlock>(*this); }
  std::shared_ptr<kl::Dense> first_, second_;
  std::shared_ptr<kl::Dropout> dropout_;
  Variable scale_;

 protected:
  // Builds the sublayers for the input, so that a model has every weight before its first step.
  void build(const Shape& input_shape) override {
    first_->ensure_built(input_shape);
    second_->ensure_built(first_->compute_output_shape(input_shape));
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor h = (*second_)((*dropout_)((*first_)(x, {.training = training}), {.training = training}));
    return nn::relu(add(x, multiply(h, scale_.read())));
  }
};

std::vector<std::string> names(const std::vector<Variable>& vs) {
  std::vector<std::string> out;
  for (const Variable& v : vs) out.push_back(v.name());
  return out;
}

TEST(LayerTracking, WeightsLossesAndStreamsOfTheTrackedLayersOnceEachInOrder) {
  auto block = std::make_shared<ResidualBlock>(4);
  (*block)(ones(Shape{2, 4}));
  const std::string a = block->first_->name(), b = block->second_->name();
  EXPECT_EQ(names(block->weights()), (std::vector<std::string>{block->name() + "/scale", a + "/kernel", a + "/bias",
                                                               b + "/kernel", b + "/bias"}));
  EXPECT_EQ(block->count_params(), 4 + 2 * (16 + 4));
  ASSERT_EQ(block->sublayers().size(), 3u);
  ASSERT_EQ(block->losses().size(), 1u);  // first_'s kernel penalty
  EXPECT_FLOAT_EQ(block->losses()[0].item<float>(), block->first_->losses()[0].item<float>());
  ASSERT_EQ(block->random_streams().size(), 1u);
  EXPECT_EQ(block->random_streams()[0], block->dropout_->random_streams()[0]);
}

TEST(LayerTracking, FreezingTheLayerFreezesWhatItTracks) {
  auto block = std::make_shared<ResidualBlock>(3);
  (*block)(ones(Shape{1, 3}));
  EXPECT_EQ(block->trainable_weights().size(), 5u);
  block->second_->set_trainable(false);  // a frozen sublayer of a trainable layer
  EXPECT_EQ(names(block->non_trainable_weights()),
            (std::vector<std::string>{block->second_->name() + "/kernel", block->second_->name() + "/bias"}));
  block->set_trainable(false);
  EXPECT_TRUE(block->trainable_weights().empty());
  EXPECT_FALSE(block->first_->trainable());
  EXPECT_EQ(block->non_trainable_weights().size(), 5u);
}

// Copies (a functional graph's handle) share what the layer tracks, including what it tracks after the copy.
TEST(LayerTracking, CopiesShareWhatIsTracked) {
  ResidualBlock block(2);
  LayerPtr copy = block.clone();
  auto extra = std::make_shared<kl::Dense>(2);
  block.track(extra);
  ASSERT_EQ(copy->sublayers().size(), 4u);
  block.track(copy);  // itself, through a copy: nothing
  EXPECT_EQ(block.sublayers().size(), 4u);
}

TEST(LayerTracking, ATrackedLayerTrainsInAModel) {
  auto block = std::make_shared<ResidualBlock>(3);
  Sequential model({Input({3}), block, kl::Dense(2)});
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 5) - 2.0f;
  Tensor x = from_vector<float>(xs, Shape{8, 3});
  Tensor y = from_vector<int64_t>({0, 1, 0, 1, 1, 0, 1, 0}, Shape{8});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  EXPECT_EQ(model.trainable_variables().size(), 5u + 2u);
  const std::vector<float> before = block->second_->kernel().read().to_vector<float>();
  model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0});
  EXPECT_NE(before, block->second_->kernel().read().to_vector<float>());  // gradients reached the sublayer
}

}  // namespace
}  // namespace lockstep::keras
