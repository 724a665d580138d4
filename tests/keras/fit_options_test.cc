// fit/evaluate/train_on_batch's Keras arguments in C++: class_weight, sample_weight, validation_split,
// validation_data as arrays, validation_batch_size and validation_freq, and Keras' error messages for their misuse.
#include <gtest/gtest.h>

#include "../error_of.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras {
namespace {

namespace kl = layers;
using testing::error_of;

// A model that predicts 0 and never learns (zero kernel, no bias, learning rate 0): its mean squared error is the
// mean of y * y, weighted as Keras weights it, so every loss below is known by hand.
Sequential zero_model(int64_t units = 1) {
  Sequential model({Input({1}), kl::Dense(units, {.use_bias = false, .kernel_initializer = "zeros"})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse"});
  return model;
}

Tensor column(const std::vector<float>& values) {
  return from_vector<float>(values, {static_cast<int64_t>(values.size()), 1});
}

// Keras' reduction: sum(weight * loss) / samples.
double weighted_mean(const std::vector<double>& losses, const std::vector<double>& weights) {
  double sum = 0;
  for (size_t i = 0; i < losses.size(); ++i) sum += losses[i] * weights[i];
  return sum / static_cast<double>(losses.size());
}

TEST(FitOptions, ClassWeightWeighsEachSampleByItsClass) {
  Sequential model = zero_model();
  const Tensor x = column({1, 1, 1, 1}), y = column({0, 1, 2, 1});
  const std::vector<double> loss{0, 1, 4, 1};  // y * y
  auto history = model.fit(x, y, {.class_weight = {{1, 3.0}, {2, 0.25}}, .verbose = 0});
  EXPECT_NEAR(history.history["loss"][0], weighted_mean(loss, {1, 3, 0.25, 3}), 1e-6);
  // Times sample_weight, as Keras 2 did.
  history = model.fit(
      x, y,
      {.sample_weight = from_vector<float>({1, 1, 2, 0}, {4}), .class_weight = {{1, 3.0}, {2, 0.25}}, .verbose = 0});
  EXPECT_NEAR(history.history["loss"][0], weighted_mean(loss, {1, 3, 0.5, 0}), 1e-6);
  // train_on_batch takes it too.
  EXPECT_NEAR(model.train_on_batch(x, y, {}, {{1, 3.0}, {2, 0.25}})["loss"], weighted_mean(loss, {1, 3, 0.25, 3}),
              1e-6);
}

TEST(FitOptions, ClassWeightOfOneHotLabelsUsesTheirArgmax) {
  Sequential model = zero_model(3);
  const Tensor x = column({1, 1, 1, 1});
  const Tensor y = from_vector<float>({1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0}, {4, 3});  // classes 0, 2, 2, 1
  auto history = model.fit(x, y, {.class_weight = {{2, 4.0}}, .verbose = 0});
  const double third = 1.0 / 3;  // mean over the 3 outputs of a one-hot y
  EXPECT_NEAR(history.history["loss"][0], weighted_mean({third, third, third, third}, {1, 4, 4, 1}), 1e-6);
}

TEST(FitOptions, SampleWeightInFitAndEvaluate) {
  Sequential model = zero_model();
  const Tensor x = column({1, 1, 1}), y = column({1, 2, 3});
  const Tensor w = from_vector<float>({2, 0, 1}, {3});
  const std::vector<double> loss{1, 4, 9};
  auto history = model.fit(x, y, {.batch_size = 2, .sample_weight = w, .verbose = 0});
  EXPECT_NEAR(history.history["loss"][0], weighted_mean(loss, {2, 0, 1}), 1e-5);
  EXPECT_NEAR(model.evaluate(x, y, {.sample_weight = w, .verbose = 0})["loss"], weighted_mean(loss, {2, 0, 1}), 1e-6);
  EXPECT_NEAR(model.evaluate(x, y, {.verbose = 0})["loss"], weighted_mean(loss, {1, 1, 1}), 1e-6);
}

// Keras holds out the last samples, taken before shuffling: with y = 0..9 and a split of 0.2, validation sees 8 and 9
// whatever the shuffle, and training the rest.
TEST(FitOptions, ValidationSplitHoldsOutTheLastFraction) {
  Sequential model = zero_model();
  std::vector<float> values(10);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const Tensor x = column(std::vector<float>(10, 1)), y = column(values);
  auto history = model.fit(x, y, {.epochs = 2, .batch_size = 3, .validation_split = 0.2, .verbose = 0});
  ASSERT_EQ(history.history["val_loss"].size(), 2u);
  EXPECT_NEAR(history.history["val_loss"][0], (64.0 + 81.0) / 2, 1e-4);
  EXPECT_NEAR(history.history["loss"][0], 140.0 / 8, 1e-4);  // 0 + 1 + 4 + ... + 49 over 8
  // Sample weights are split with the samples.
  std::vector<float> weights(10, 1);
  weights[9] = 0;
  history =
      model.fit(x, y, {.sample_weight = from_vector<float>(weights, {10}), .validation_split = 0.2, .verbose = 0});
  EXPECT_NEAR(history.history["val_loss"][0], 64.0 / 2, 1e-4);
}

TEST(FitOptions, ValidationArraysBatchAndFrequency) {
  Sequential model = zero_model();
  const Tensor x = column({1, 1, 1, 1}), y = column({1, 1, 1, 1});
  const Tensor xv = column({1, 1}), yv = column({2, 4});
  auto history = model.fit(x, y,
                           {.epochs = 4,
                            .validation_data = ValidationData(xv, yv, from_vector<float>({1, 0}, {2})),
                            .validation_batch_size = 1,
                            .validation_freq = 2,
                            .verbose = 0});
  ASSERT_EQ(history.history["loss"].size(), 4u);
  ASSERT_EQ(history.history["val_loss"].size(), 2u);  // after epochs 2 and 4, as Keras
  EXPECT_NEAR(history.history["val_loss"][1], 4.0 / 2, 1e-6);
}

TEST(FitOptions, MisuseSaysWhatKerasSays) {
  Sequential model = zero_model();
  const Tensor x = column({1, 1, 1}), y = column({1, 2, 3});
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y).batch(2);
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                                   : ::testing::AssertionFailure() << message;
  };
  EXPECT_EQ(error_of<ValueError>([&] { model.fit(x, y, {.validation_split = 0.99, .verbose = 0}); }),
            "Training data contains 3 samples, which is not sufficient to split it into a validation and training set "
            "as specified by `validation_split=0.99`. Either provide more data, or a different value for the "
            "`validation_split` argument.");
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x, y, {.validation_split = 1.0, .verbose = 0}); }),
                  "`validation_split=1.0`"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x, y, {.validation_split = -0.5, .verbose = 0}); }),
                  "validation_split must be a fraction between 0 and 1, got -0.5"));
  EXPECT_EQ(
      error_of<ValueError>([&] { model.fit(x, y, {.validation_split = 0.5, .validation_data = ds, .verbose = 0}); }),
      "pass validation_data or validation_split, not both");
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(ds, {.validation_split = 0.5, .verbose = 0}); }),
                  "`validation_split` is only supported for Tensors or NumPy arrays"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(ds, {.sample_weight = y, .verbose = 0}); }),
                  "`sample_weight` argument is not supported when using a dataset"));
  EXPECT_TRUE(has(error_of<ValueError>([&] {
                    model.fit(ds, {.class_weight = {{1, 2.0}}, .verbose = 0});
                  }),
                  "`class_weight` argument is not supported"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.evaluate(ds, {.sample_weight = y, .verbose = 0}); }),
                  "`sample_weight` argument is not supported when using a dataset"));
  EXPECT_TRUE(has(error_of<ValueError>([&] {
                    model.fit(x, y, {.sample_weight = from_vector<float>({1, 1}, {2}), .verbose = 0});
                  }),
                  "fit(): x has 3 samples but sample_weight has 2"));
  EXPECT_TRUE(has(error_of<ValueError>([&] {
                    model.evaluate(x, y, {.sample_weight = from_vector<float>({1, 1}, {2}), .verbose = 0});
                  }),
                  "evaluate(): x has 3 samples but sample_weight has 2"));
  EXPECT_TRUE(has(
      error_of<ValueError>([&] { model.fit(x, y, {.validation_data = ValidationData(x, column({1})), .verbose = 0}); }),
      "fit(): validation_data's x has 3 samples but validation_data's y has 1"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x, y, {.validation_freq = 0, .verbose = 0}); }),
                  "validation_freq must be >= 1, got 0"));
}

// Keras reads an element as TF does (unpack_x_y_sample_weight); a dict x is refused, saying why.
TEST(FitOptions, DatasetElementsUnpackAsKerasDoesAndADictXIsRefused) {
  Sequential model = zero_model();
  const Tensor x = column({1, 1, 1, 1}), y = column({0, 1, 2, 1});
  const data::Dataset triples = data::Dataset::from_tensor_slices(data::Element{x, y, column({1, 1, 0, 0})}).batch(2);
  EXPECT_NEAR(model.evaluate(triples, {.verbose = 0})["loss"], weighted_mean({0, 1, 4, 1}, {1, 1, 0, 0}), 1e-6);
  const data::Dataset dicts =
      data::Dataset::from_tensor_slices(data::Element{data::Element::dict({{"features", x}}), y}).batch(2);
  const std::string m = error_of<ValueError>([&] { model.fit(dicts, {.verbose = 0}); });
  EXPECT_NE(m.find("{'features': float32 (2, 1)}"), std::string::npos) << m;
  EXPECT_NE(m.find("multi-input dict models are not supported yet"), std::string::npos) << m;
}

}  // namespace
}  // namespace lockstep::keras
