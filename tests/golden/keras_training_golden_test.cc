// Golden test: 20 train_on_batch steps of the tutorial model from generated weights and batches, with SGD,
// Adam, SGD+Nesterov and RMSprop, against TensorFlow 2.21 / Keras 3 (tests/golden/keras_training_steps.json,
// from make_keras_training_golden.py): every step's loss to 1e-4 relative, the final weights to 1e-3 of each
// tensor's largest value.
#include <gtest/gtest.h>

#include "golden_util.h"
#include "lockstep/keras/model.h"

namespace lockstep::golden {
namespace {

namespace kl = keras::layers;
constexpr double kRelativeTolerance = 1e-4;
// After 20 steps single elements drift further: the convolution's rounding depends on the kernel oneDNN picks
// for the CPU (AVX2 and AVX-512 differ), and momentum carries each difference on; a wrong update rule is off
// by far more (the learning rate times a gradient, about 1e-2 of the weights).
constexpr double kFinalWeightTolerance = 1e-3;

const json& golden() {
  static const json data = load_golden("keras_training_steps.json");
  return data;
}

std::shared_ptr<keras::optimizers::Optimizer> make_optimizer(const json& o) {
  namespace ko = keras::optimizers;
  const std::string type = o["type"];
  const double lr = o["learning_rate"];
  if (type == "SGD")
    return ko::SGD({.learning_rate = lr, .momentum = o.value("momentum", 0.0), .nesterov = o.value("nesterov", false)});
  if (type == "Adam")
    return ko::Adam({.learning_rate = lr, .beta_1 = o["beta_1"], .beta_2 = o["beta_2"], .epsilon = o["epsilon"]});
  if (type == "RMSprop")
    return ko::RMSprop({.learning_rate = lr, .rho = o.value("rho", 0.9), .momentum = o.value("momentum", 0.0),
                        .epsilon = o.value("epsilon", 1e-7), .centered = o.value("centered", false)});
  throw std::runtime_error("unknown optimizer " + type);
}

class KerasTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(KerasTraining, LossesAndFinalWeightsMatchKeras) {
  const json& g = golden();
  const json& run = g["runs"][GetParam()];
  keras::Sequential model({keras::Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}),
                           kl::Flatten(), kl::Dense(128, {.activation = "relu"}), kl::Dense(10)});
  std::vector<Tensor> initial;
  for (const std::string& name : kWeightNames) {
    const json& w = g["initial_weights"][name];
    const Shape shape = shape_of(w["shape"]);
    initial.push_back(from_vector<float>(formula_tensor(shape.numel(), w["salt"].get<uint64_t>(), w["scale"]), shape));
  }
  model.set_weights(initial);
  model.compile({.optimizer = make_optimizer(run["optimizer"]),
                 .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true})});

  const auto expected_losses = run["losses"].get<std::vector<double>>();
  for (size_t k = 0; k < expected_losses.size(); ++k) {
    const json& b = g["batches"][k];
    Tensor x = from_vector<float>(formula_tensor(kBatch * 28 * 28, b["image_salt"].get<uint64_t>(), nullptr), {kBatch, 28, 28});
    std::vector<int64_t> labels = formula_labels(kBatch, b["label_salt"].get<uint64_t>());
    ASSERT_EQ(labels, b["labels"].get<std::vector<int64_t>>()) << "label formula, step " << k;
    const double loss = model.train_on_batch(x, from_vector<int64_t>(labels, {kBatch}))["loss"];
    expect_relative("loss at step " + std::to_string(k), loss, expected_losses[k], std::abs(expected_losses[k]),
                    kRelativeTolerance);
  }
  std::vector<Variable> vars = model.variables();
  // Where it trained: the CPU, or the GPU under LOCKSTEP_DEVICE=/gpu:0 (scripts/gpu-check).
  for (const Variable& v : vars) EXPECT_EQ(v.value().device(), default_device()) << v.name();
  for (size_t w = 0; w < kWeightNames.size(); ++w) {
    const json& e = run["final_weights"][kWeightNames[w]];
    const std::vector<float> actual = vars[w].value().to_vector<float>();
    expect_tensor_matches(GetParam() + " " + kWeightNames[w], actual, e, kFinalWeightTolerance);
    double sum = 0;
    for (float v : actual) sum += v;
    expect_relative(kWeightNames[w] + " sum", sum, e["sum"].get<double>(), e["sum_abs"].get<double>(), kRelativeTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, KerasTraining, ::testing::Values("sgd", "adam", "sgd_nesterov", "rmsprop"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace lockstep::golden
