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

namespace lockstep {
namespace {

using nlohmann::json;

constexpr double kRelativeTolerance = 1e-5;
constexpr int64_t kBatch = 64;
constexpr int64_t kClasses = 10;
constexpr int kMaxReportedMismatches = 10;
// In the order of the JSON's "gradients" and of the tape.gradient() sources.
const std::vector<std::string> kWeightNames = {"conv_kernel",   "conv_bias",     "dense1_kernel",
                                               "dense1_bias",   "dense2_kernel", "dense2_bias"};

// The input formula, identical to make_tutorial_golden.py. Element i (row-major, lockstep layout) of the
// tensor with salt s:
//   h = (i * 2654435761 + s * 40503 + 12345) mod 2^32      (uint32 arithmetic)
//   u = (h >> 8) / 2^24                                      (exact in float32)
//   weight = float32((u - 0.5) * scale)                      (product in double, rounded to float32 once)
//   image  = float32(u)                                      (in [0, 1))
//   label  = h % 10
uint32_t formula_hash(uint64_t i, uint64_t salt) {
  return static_cast<uint32_t>(i * 2654435761ull + salt * 40503ull + 12345ull);
}

double formula_uniform(uint64_t i, uint64_t salt) { return static_cast<double>(formula_hash(i, salt) >> 8) / 16777216.0; }

// scale_or_null null gives images (u itself).
std::vector<float> formula_tensor(int64_t numel, uint64_t salt, const json& scale_or_null) {
  std::vector<float> out(static_cast<size_t>(numel));
  for (size_t i = 0; i < out.size(); ++i) {
    const double u = formula_uniform(i, salt);
    out[i] = static_cast<float>(scale_or_null.is_null() ? u : (u - 0.5) * scale_or_null.get<double>());
  }
  return out;
}

const json& golden() {
  static const json data = [] {
    const char* root = std::getenv("LOCKSTEP_SOURCE_DIR");
    if (root == nullptr) throw std::runtime_error("LOCKSTEP_SOURCE_DIR is not set; run this test through ctest");
    const std::string path = std::string(root) + "/tests/golden/tutorial_cnn_step.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path + "; regenerate it with make_tutorial_golden.py");
    return json::parse(in);
  }();
  return data;
}

std::vector<std::string> input_names() {
  std::vector<std::string> names = {"images"};
  names.insert(names.end(), kWeightNames.begin(), kWeightNames.end());
  return names;
}

Shape shape_of(const json& dims) { return Shape(dims.get<std::vector<int64_t>>()); }

// "[i, j, k, l]" for flat index `flat` of `shape`, so a mismatch names the element in the lockstep layout.
std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream s;
  s << "[";
  for (size_t d = 0; d < idx.size(); ++d) s << (d ? ", " : "") << idx[d];
  s << "]";
  return s.str();
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
    const uint64_t label_salt = g["label_salt"].get<uint64_t>();
    for (int64_t i = 0; i < kBatch; ++i) s.labels.push_back(formula_hash(static_cast<uint64_t>(i), label_salt) % kClasses);

    std::vector<Variable> weights;
    for (size_t k = 0; k < kWeightNames.size(); ++k) weights.emplace_back(tensors[k + 1], VariableOptions{.name = kWeightNames[k]});
    const Tensor& images = tensors[0];
    const Tensor labels = from_vector<int64_t>(s.labels, Shape{kBatch});

    GradientTape tape;
    Tensor y = nn::relu(nn::conv2d(images, weights[0], weights[1], Conv2dOptions{}));
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

// Expects |actual[indices[k]] - expected[k]| <= kRelativeTolerance * max_k |expected[k]|, reporting the first
// mismatches and the worst one with their multi-indices.
void expect_values_near(const std::string& name, const Shape& shape, const std::vector<float>& actual,
                        const std::vector<int64_t>& indices, const std::vector<double>& expected) {
  ASSERT_EQ(indices.size(), expected.size()) << name;
  double scale = 0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  const double tolerance = kRelativeTolerance * scale;
  int mismatches = 0;
  size_t worst = 0;
  double worst_error = -1;
  for (size_t k = 0; k < expected.size(); ++k) {
    const double error = std::abs(static_cast<double>(actual[static_cast<size_t>(indices[k])]) - expected[k]);
    if (error > worst_error) worst_error = error, worst = k;
    if (error > tolerance && ++mismatches <= kMaxReportedMismatches) {
      ADD_FAILURE() << name << index_str(indices[k], shape) << ": expected " << expected[k] << ", actual "
                    << actual[static_cast<size_t>(indices[k])] << ", |diff| " << error << " > tolerance " << tolerance;
    }
  }
  EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << expected.size()
                           << " compared values out of tolerance " << tolerance << " (1e-5 * max |expected| " << scale
                           << "); worst " << index_str(indices[worst], shape) << " expected " << expected[worst]
                           << " actual " << actual[static_cast<size_t>(indices[worst])];
}

void expect_relative(const std::string& what, double actual, double expected, double magnitude) {
  EXPECT_LE(std::abs(actual - expected), kRelativeTolerance * magnitude)
      << what << ": expected " << expected << ", actual " << actual << " (tolerance 1e-5 * " << magnitude << ")";
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
    const Shape shape = shape_of(e["shape"]);
    ASSERT_EQ(grad.shape(), shape) << "gradient of " << name << " has shape " << grad.shape().str();
    const std::vector<float> actual = grad.to_vector<float>();

    if (e.contains("values")) {
      std::vector<int64_t> all(actual.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      expect_values_near(name, shape, actual, all, e["values"].get<std::vector<double>>());
    } else {
      // Too large to store: samples at formula indices, and a projection on a formula tensor for the rest.
      const auto indices = e["sample_indices"].get<std::vector<int64_t>>();
      const uint64_t sample_salt = e["sample_salt"].get<uint64_t>();
      for (size_t k = 0; k < indices.size(); ++k) {
        ASSERT_EQ(indices[k], static_cast<int64_t>(formula_hash(k, sample_salt) % actual.size()))
            << name << " sample index " << k;
      }
      expect_values_near(name, shape, actual, indices, e["sample_values"].get<std::vector<double>>());
      const std::vector<float> projection =
          formula_tensor(static_cast<int64_t>(actual.size()), e["projection_salt"].get<uint64_t>(), 1.0);
      double dot = 0;
      for (size_t i = 0; i < actual.size(); ++i) dot += static_cast<double>(actual[i]) * projection[i];
      expect_relative(name + " projection", dot, e["projection"].get<double>(), e["projection_abs"].get<double>());
    }

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
}  // namespace lockstep
