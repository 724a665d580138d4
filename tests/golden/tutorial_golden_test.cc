// Golden test: one training step of the TensorFlow multi-worker tutorial CNN (Conv2D 32 3x3, Dense 128,
// Dense 10, sparse softmax cross-entropy, batch mean) on generated weights and data; the loss and every
// gradient must match PyTorch's (tests/golden/tutorial_cnn_step.json, from make_tutorial_golden.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/autograd/ops.h"
#include "lockstep/autograd/tape.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/tensor/ops.h"
#include "golden_util.h"

namespace lockstep::golden {
namespace {

constexpr double kRelativeTolerance = 1e-5;

const json& golden() {
  static const json data = load_golden("tutorial_cnn_step.json");
  return data;
}

std::vector<std::string> input_names() {
  std::vector<std::string> names = {"images"};
  names.insert(names.end(), kWeightNames.begin(), kWeightNames.end());
  return names;
}

// One forward and backward pass of the tutorial model, run once for all tests.
struct Step {
  std::vector<std::vector<float>> inputs;  // images, then the weights in kWeightNames order
  std::vector<int64_t> labels;
  double loss = 0;
  std::vector<float> logits;
  std::vector<Tensor> gradients;  // in kWeightNames order
};

const Step& step() {
  static const Step result = [] {
    const json& g = golden();
    Step s;
    std::vector<Tensor> tensors;
    for (const std::string& name : input_names()) {
      const json& spec = g["inputs"][name];
      const Shape shape = shape_of(spec["shape"]);
      s.inputs.push_back(formula_tensor(shape.numel(), spec["salt"].get<uint64_t>(), spec["scale"]));
      tensors.push_back(from_vector<float>(s.inputs.back(), shape));
    }
    s.labels = formula_labels(kBatch, g["label_salt"].get<uint64_t>());

    std::vector<Variable> weights;
    for (size_t k = 0; k < kWeightNames.size(); ++k) weights.emplace_back(tensors[k + 1], VariableOptions{.name = kWeightNames[k]});
    const Tensor& images = tensors[0];
    const Tensor labels = from_vector<int64_t>(s.labels, Shape{kBatch});

    GradientTape tape;
    Tensor y = nn::relu(nn::conv2d(images, weights[0], weights[1], Conv2dParams{}));
    y = reshape(y, Shape{kBatch, -1});  // NHWC flattened in (h, w, c) order, as Keras' Flatten
    y = nn::relu(add(matmul(y, weights[2]), weights[3]));
    const Tensor logits = add(matmul(y, weights[4]), weights[5]);
    const Tensor loss = reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
    s.gradients = tape.gradient(loss, weights);
    s.loss = loss.item<double>();
    s.logits = logits.to_vector<float>();
    return s;
  }();
  return result;
}

void expect_relative(const std::string& what, double actual, double expected, double magnitude) {
  golden::expect_relative(what, actual, expected, magnitude, kRelativeTolerance);
}

TEST(TutorialGolden, InputsMatchFormula) {
  // A wrong port of the formula shows here rather than as wrong gradients.
  const json& g = golden();
  const Step& s = step();
  const std::vector<std::string> names = input_names();
  for (size_t k = 0; k < names.size(); ++k) {
    double sum = 0;
    for (float v : s.inputs[k]) sum += v;
    EXPECT_NEAR(sum, g["inputs"][names[k]]["sum"].get<double>(), 1e-6) << "sum of generated input " << names[k];
  }
  EXPECT_EQ(s.labels, g["labels"].get<std::vector<int64_t>>());
}

TEST(TutorialGolden, LossAndLogits) {
  const json& g = golden();
  const Step& s = step();
  const double expected = g["loss"].get<double>();
  expect_relative("loss", s.loss, expected, std::abs(expected));
  ASSERT_EQ(s.logits.size(), static_cast<size_t>(kBatch * kClasses));
  double sum = 0;
  for (float v : s.logits) sum += v;
  expect_relative("sum of logits", sum, g["logits_sum"].get<double>(), g["logits_sum_abs"].get<double>());
}

TEST(TutorialGolden, Gradients) {
  const json& g = golden();
  const Step& s = step();
  ASSERT_EQ(s.gradients.size(), kWeightNames.size());
  for (size_t w = 0; w < kWeightNames.size(); ++w) {
    const std::string& name = kWeightNames[w];
    const json& e = g["gradients"][name];
    const Tensor& grad = s.gradients[w];
    ASSERT_TRUE(grad.defined()) << "no gradient for " << name;
    EXPECT_EQ(grad.device(), default_device()) << name << ": LOCKSTEP_DEVICE places the weights, and their gradients";
    ASSERT_EQ(grad.shape(), shape_of(e["shape"])) << "gradient of " << name << " has shape " << grad.shape().str();
    const std::vector<float> actual = grad.to_vector<float>();

    expect_tensor_matches(name, actual, e, kRelativeTolerance);

    double sum = 0, sum_squares = 0;
    for (float v : actual) sum += v, sum_squares += static_cast<double>(v) * v;
    const double sum_abs = e["sum_abs"].get<double>();
    expect_relative(name + " sum", sum, e["sum"].get<double>(), sum_abs);
    // Elementwise errors of 1e-5 * max |g| move sum(g^2) by up to 2e-5 * max |g| * sum |g|.
    expect_relative(name + " sum of squares", sum_squares, e["sum_squares"].get<double>(),
                    2 * e["max_abs"].get<double>() * sum_abs);
  }
}

}  // namespace
}  // namespace lockstep::golden
