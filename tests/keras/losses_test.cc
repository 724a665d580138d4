// Losses against hand-computed (NumPy-style) references for every loss, reduction and sample weighting;
// gradients by central finite differences in float64; tf.nn.compute_average_loss; errors.
#include "lockstep/keras/losses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "lockstep/autograd/ops.h"

namespace lockstep::keras::losses {
namespace {

using Vec = std::vector<double>;

Tensor f64(const Vec& v, const Shape& s) {
  return from_vector(v, s);
}
Tensor f32(const Vec& v, const Shape& s) {
  return from_vector(std::vector<float>(v.begin(), v.end()), s);
}
Tensor i64(const std::vector<int64_t>& v, const Shape& s) {
  return from_vector(v, s);
}

void expect_values(const Tensor& got, const Vec& expected, double tol = 1e-12) {
  auto v = got.to_vector<double>();
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], tol * (1 + std::abs(expected[i]))) << i;
}

// -log softmax(z)[label] for one row.
double xent_logits(const Vec& z, size_t label) {
  double mx = *std::max_element(z.begin(), z.end()), s = 0;
  for (double x : z) s += std::exp(x - mx);
  return mx + std::log(s) - z[label];
}

const Vec kLogits = {2.0, 1.0, 0.1, 0.5, 2.5, -1.0};  // [2, 3]
const Vec kProbs = {0.7, 0.2, 0.1, 0.1, 0.3, 0.6};    // rows sum to 1
const Shape k23{2, 3};

// ---- per-example values ----

TEST(Losses, SparseCategoricalFromLogitsForEveryLabelForm) {
  const Vec expected = {xent_logits({2.0, 1.0, 0.1}, 0), xent_logits({0.5, 2.5, -1.0}, 2)};
  auto loss = SparseCategoricalCrossentropy({.from_logits = true, .reduction = Reduction::NONE});
  const Tensor logits = f64(kLogits, k23);
  for (const Tensor& labels :
       {i64({0, 2}, Shape{2}), i64({0, 2}, Shape{2, 1}), from_vector(std::vector<int32_t>{0, 2}, Shape{2}),
        from_vector(std::vector<uint8_t>{0, 2}, Shape{2}), f32({0, 2}, Shape{2}), f64({0, 2}, Shape{2, 1})}) {
    SCOPED_TRACE(labels.str());
    expect_values((*loss)(labels, logits), expected);
  }
  expect_values(loss->call(i64({0, 2}, Shape{2}), f32(kLogits, k23)), expected, 1e-6);  // float32 too
}

TEST(Losses, SparseCategoricalFromProbabilitiesNormalisesAndClips) {
  auto loss = SparseCategoricalCrossentropy({.reduction = Reduction::NONE});
  expect_values((*loss)(i64({0, 2}, Shape{2}), f64(kProbs, k23)), {-std::log(0.7), -std::log(0.6)});
  // Rows not summing to 1 are normalised; a zero probability is clipped to 1e-7.
  const double eps = 1e-7;
  expect_values((*loss)(i64({1, 0}, Shape{2}), f64({0.2, 0.4, 0.2, 0.0, 1.0, 0.0}, k23)),
                {-std::log(0.4 / 0.8), -std::log(eps / (1 - eps + 2 * eps))});
}

TEST(Losses, CategoricalCrossentropy) {
  const Vec onehot = {1, 0, 0, 0, 0, 1};
  auto from_logits = CategoricalCrossentropy({.from_logits = true, .reduction = Reduction::NONE});
  expect_values((*from_logits)(f64(onehot, k23), f64(kLogits, k23)),
                {xent_logits({2.0, 1.0, 0.1}, 0), xent_logits({0.5, 2.5, -1.0}, 2)});
  auto from_probs = CategoricalCrossentropy({.reduction = Reduction::NONE});
  expect_values((*from_probs)(f64(onehot, k23), f64({1.4, 0.4, 0.2, 0.1, 0.3, 0.6}, k23)),
                {-std::log(0.7), -std::log(0.6)});
  // label_smoothing 0.3 with 3 classes: targets 1 -> 0.8, 0 -> 0.1.
  auto smoothed = CategoricalCrossentropy({.label_smoothing = 0.3, .reduction = Reduction::NONE});
  expect_values((*smoothed)(f64(onehot, k23), f64(kProbs, k23)),
                {-(0.8 * std::log(0.7) + 0.1 * std::log(0.2) + 0.1 * std::log(0.1)),
                 -(0.1 * std::log(0.1) + 0.1 * std::log(0.3) + 0.8 * std::log(0.6))});
}

TEST(Losses, BinaryCrossentropy) {
  const Vec t = {1, 0, 1, 1}, x = {1.5, -0.5, -2.0, 0.25};
  Vec from_logits;
  for (size_t i = 0; i < t.size(); ++i) {
    const double p = 1 / (1 + std::exp(-x[i]));
    from_logits.push_back(-(t[i] * std::log(p) + (1 - t[i]) * std::log(1 - p)));
  }
  auto logits = BinaryCrossentropy({.from_logits = true, .reduction = Reduction::NONE});
  // [4, 1] -> [4]: the mean over the last axis.
  expect_values((*logits)(f64(t, Shape{4, 1}), f64(x, Shape{4, 1})), from_logits);
  // y_true [4] against y_pred [4, 1] is fitted to the same rank, as Keras does.
  expect_values((*logits)(f64(t, Shape{4}), f64(x, Shape{4, 1})), from_logits);
  // [2, 2] -> [2].
  expect_values((*logits)(f64(t, Shape{2, 2}), f64(x, Shape{2, 2})),
                {(from_logits[0] + from_logits[1]) / 2, (from_logits[2] + from_logits[3]) / 2});

  auto probs = BinaryCrossentropy({.reduction = Reduction::NONE});
  const Vec p = {0.9, 0.2, 0.3, 0.6};
  expect_values((*probs)(f64(t, Shape{4, 1}), f64(p, Shape{4, 1})),
                {-std::log(0.9), -std::log(0.8), -std::log(0.3), -std::log(0.6)});
  // Probabilities of exactly 0 or 1 are clipped to [1e-7, 1 - 1e-7].
  expect_values((*probs)(f64({1, 0}, Shape{2, 1}), f64({0.0, 1.0}, Shape{2, 1})), {-std::log(1e-7), -std::log(1e-7)},
                1e-9);
  auto smoothed = BinaryCrossentropy({.label_smoothing = 0.2, .reduction = Reduction::NONE});
  expect_values((*smoothed)(f64({1}, Shape{1, 1}), f64({0.9}, Shape{1, 1})),
                {-(0.9 * std::log(0.9) + 0.1 * std::log(0.1))});
}

TEST(Losses, MeanSquaredError) {
  auto loss = MeanSquaredError({.reduction = Reduction::NONE});
  expect_values((*loss)(f64({1, 2, 3, 4}, Shape{2, 2}), f64({1.5, 2, 1, 8}, Shape{2, 2})), {0.125, 10.0});
  expect_values((*loss)(f64({1, 2}, Shape{2}), f64({2, 4}, Shape{2, 1})), {1.0, 4.0});
  // Integer targets are cast to the predictions' dtype.
  expect_values((*loss)(i64({1, 2}, Shape{2, 1}), f32({2, 4}, Shape{2, 1})), {1.0, 4.0});
}

TEST(Losses, MeanAbsoluteError) {
  auto loss = MeanAbsoluteError({.reduction = Reduction::NONE});
  expect_values((*loss)(f64({1, 2, 3, 4}, Shape{2, 2}), f64({1.5, 2, 1, 8}, Shape{2, 2})), {0.25, 3.0});
  expect_values((*loss)(f64({1, 2}, Shape{2}), f64({2, 0}, Shape{2, 1})), {1.0, 2.0});
  EXPECT_EQ(get("mae")->name(), "mean_absolute_error");
  EXPECT_DOUBLE_EQ((*get("mean_absolute_error"))(f64({1, 2}, Shape{2, 1}), f64({2, 0}, Shape{2, 1})).item<double>(), 1.5);
}

TEST(Losses, KLDivergencePoissonLogCoshAndHinge) {
  const Tensor t = f64({0.2, 0.8, 0.5, 0.5}, Shape{2, 2}), p = f64({0.4, 0.6, 0.9, 0.1}, Shape{2, 2});
  auto kl = [](double a, double b) { return a * std::log(a / b); };
  expect_values(kl_divergence(t, p), {kl(0.2, 0.4) + kl(0.8, 0.6), kl(0.5, 0.9) + kl(0.5, 0.1)});
  // Both are clipped to [1e-7, 1]: a zero label adds nothing, a negative prediction counts as 1e-7.
  expect_values(kl_divergence(f64({0, 1}, Shape{1, 2}), f64({0.5, -1}, Shape{1, 2})), {kl(1e-7, 0.5) + kl(1, 1e-7)},
                1e-9);
  auto pois = [](double a, double b) { return b - a * std::log(b + 1e-7); };
  expect_values(poisson(f64({1, 3, 0, 2}, Shape{2, 2}), f64({0.5, 2, 1, 4}, Shape{2, 2})),
                {(pois(1, 0.5) + pois(3, 2)) / 2, (pois(0, 1) + pois(2, 4)) / 2}, 1e-9);
  expect_values(log_cosh(t, p), {(std::log(std::cosh(0.2)) + std::log(std::cosh(-0.2))) / 2,
                                 (std::log(std::cosh(0.4)) + std::log(std::cosh(-0.4))) / 2});
  // Labels of -1 and 1 are used as they are; labels all 0 or 1 become -1 and 1 first; others are used as they are.
  const Tensor scores = f64({0.3, -2, 1.5, 0.5}, Shape{2, 2});
  expect_values(hinge(f64({1, -1, -1, 1}, Shape{2, 2}), scores), {(0.7 + 0) / 2, (2.5 + 0.5) / 2});
  expect_values(hinge(f64({1, 0, 0, 1}, Shape{2, 2}), scores), {(0.7 + 0) / 2, (2.5 + 0.5) / 2});
  expect_values(hinge(f64({0.5, 0, 0, 1}, Shape{2, 2}), scores), {(0.85 + 1) / 2, (1 + 0.5) / 2});
  EXPECT_EQ(get("kld")->class_name(), "KLDivergence");
  EXPECT_EQ(get("KLD")->name(), "kl_divergence");
  EXPECT_EQ(get("poisson")->name(), "poisson");
  EXPECT_EQ(get("log_cosh")->name(), "log_cosh");
  EXPECT_EQ(get("hinge")->class_name(), "Hinge");
}

// ---- reductions and sample weights ----

TEST(Losses, ReductionsAndSampleWeights) {
  const Tensor t = f64({1, 2, 3}, Shape{3, 1}), p = f64({2, 4, 6}, Shape{3, 1});  // per-example 1, 4, 9
  auto with = [&](Reduction r) { return MeanSquaredError({.reduction = r}); };
  expect_values((*with(Reduction::NONE))(t, p), {1, 4, 9});
  expect_values((*with(Reduction::SUM))(t, p), {14});
  expect_values((*with(Reduction::SUM_OVER_BATCH_SIZE))(t, p), {14.0 / 3});
  expect_values((*with(Reduction::AUTO))(t, p), {14.0 / 3});
  EXPECT_EQ((*with(Reduction::AUTO))(t, p).rank(), 0);

  // Weights [3] and [3, 1] both apply per example; the batch size stays 3 (not the sum of weights).
  for (const Tensor& w : {f64({1, 0.5, 0}, Shape{3}), f64({1, 0.5, 0}, Shape{3, 1}), f32({1, 0.5, 0}, Shape{3})}) {
    SCOPED_TRACE(w.str());
    expect_values((*with(Reduction::NONE))(t, p, w), {1, 2, 0});
    expect_values((*with(Reduction::SUM))(t, p, w), {3});
    expect_values((*with(Reduction::AUTO))(t, p, w), {1});
  }
  expect_values((*with(Reduction::SUM))(t, p, scalar(2.0, DType::float64)), {28});

  // Per-element losses [2, 2] with per-example weights [2]: weights are expanded to [2, 1].
  auto sparse = SparseCategoricalCrossentropy({.from_logits = true, .reduction = Reduction::SUM_OVER_BATCH_SIZE});
  const Tensor labels = i64({0, 1, 2, 0}, Shape{2, 2});
  const Tensor logits = f64({1, 2, 3, 3, 2, 1, 0, 0, 1, 1, 1, 1}, Shape{2, 2, 3});
  const double l0 = xent_logits({1, 2, 3}, 0), l1 = xent_logits({3, 2, 1}, 1), l2 = xent_logits({0, 0, 1}, 2),
               l3 = xent_logits({1, 1, 1}, 0);
  expect_values((*sparse)(labels, logits), {(l0 + l1 + l2 + l3) / 4});
  expect_values((*sparse)(labels, logits, f64({2, 0}, Shape{2})), {(2 * l0 + 2 * l1) / 4});
}

TEST(Losses, EmptyBatchGivesZero) {
  auto loss = SparseCategoricalCrossentropy({.from_logits = true});
  Tensor l = (*loss)(i64({}, Shape{0}), f32({}, Shape{0, 3}));
  EXPECT_EQ(l.item<float>(), 0.0f);
}

// ---- gradients ----

// Checks d loss(y_true, y_pred, w) / d y_pred against central differences.
void check_gradient(const Loss& loss, const Tensor& y_true, const Vec& pred, const Shape& shape,
                    const Tensor& weight = {}) {
  SCOPED_TRACE(loss.name());
  Tensor y_pred = f64(pred, shape);
  GradientTape tape;
  tape.watch(y_pred);
  Tensor value = loss(y_true, y_pred, weight);
  const auto analytic = tape.gradient(value, y_pred).to_vector<double>();
  const double h = 1e-6;
  for (size_t i = 0; i < pred.size(); ++i) {
    Vec up = pred, down = pred;
    up[i] += h;
    down[i] -= h;
    const double numeric =
        (loss(y_true, f64(up, shape), weight).item<double>() - loss(y_true, f64(down, shape), weight).item<double>()) /
        (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 1e-7 * (1 + std::abs(numeric))) << "element " << i;
  }
}

TEST(Losses, GradientsMatchFiniteDifferences) {
  const Tensor w3 = f64({1.0, 0.5, 2.0}, Shape{3});
  const Vec logits = {0.3, -1.2, 0.8, 1.1, 0.2, -0.4, -0.7, 0.9, 0.05};
  const Vec probs = {0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.25, 0.25, 0.5};
  const Tensor labels = i64({2, 0, 1}, Shape{3}), onehot = f64({0, 0, 1, 1, 0, 0, 0, 1, 0}, Shape{3, 3});
  const Shape s33{3, 3};
  check_gradient(*SparseCategoricalCrossentropy({.from_logits = true}), labels, logits, s33, w3);
  check_gradient(*SparseCategoricalCrossentropy(), labels, probs, s33, w3);
  check_gradient(*CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1}), onehot, logits, s33, w3);
  check_gradient(*CategoricalCrossentropy({.reduction = Reduction::SUM}), onehot, probs, s33);
  const Tensor bits = f64({1, 0, 1, 0, 0, 1, 1, 1, 0}, s33);
  check_gradient(*BinaryCrossentropy({.from_logits = true}), bits, logits, s33, w3);
  check_gradient(*BinaryCrossentropy({.label_smoothing = 0.1}), bits, probs, s33);
  check_gradient(*MeanSquaredError({.reduction = Reduction::SUM}), onehot, logits, s33, w3);
  check_gradient(*KLDivergence(), f64(probs, s33), {0.4, 0.4, 0.2, 0.3, 0.3, 0.4, 0.1, 0.6, 0.3}, s33, w3);
  check_gradient(*Poisson({.reduction = Reduction::SUM}), bits, probs, s33, w3);
  check_gradient(*LogCosh(), onehot, logits, s33, w3);
  check_gradient(*Hinge(), bits, logits, s33, w3);
}

TEST(Losses, BinaryCrossentropyFromLogitsHasTFsGradientAtZero) {
  Tensor x = f64({0.0}, Shape{1, 1});
  GradientTape tape;
  tape.watch(x);
  Tensor l = (*BinaryCrossentropy({.from_logits = true}))(f64({1}, Shape{1, 1}), x);
  EXPECT_NEAR(tape.gradient(l, x).item<double>(), -0.5, 1e-15);  // sigmoid(0) - 1
}

// ---- compute_average_loss and scale_regularization_loss ----

TEST(Losses, ComputeAverageLoss) {
  const Tensor per_example = f32({1, 2, 3, 4}, Shape{4});
  EXPECT_FLOAT_EQ(nn::compute_average_loss(per_example).item<float>(), 2.5f);  // 10 / (4 * 1 replica)
  EXPECT_FLOAT_EQ(nn::compute_average_loss(per_example, {.global_batch_size = 8}).item<float>(), 1.25f);
  EXPECT_FLOAT_EQ(
      nn::compute_average_loss(per_example, {.global_batch_size = 8, .sample_weight = f32({1, 0, 1, 0}, Shape{4})})
          .item<float>(),
      0.5f);
  EXPECT_EQ(nn::compute_average_loss(per_example).dtype(), DType::float32);
  // Per-element losses [2, 2]: the batch is the first axis.
  EXPECT_FLOAT_EQ(nn::compute_average_loss(f32({1, 2, 3, 4}, Shape{2, 2})).item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(nn::scale_regularization_loss(scalar(3.0)).item<float>(), 3.0f);
  EXPECT_EQ(nn::current_num_replicas_in_sync(), 1);
  try {
    nn::compute_average_loss(scalar(1.0));
    FAIL() << "scalar per-example loss accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("at least rank 1"), std::string::npos) << e.what();
  }
  try {
    nn::compute_average_loss(per_example, {.global_batch_size = -2});
    FAIL() << "negative global batch size accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("global_batch_size must be positive"), std::string::npos) << e.what();
  }
}

TEST(Losses, ComputeAverageLossIsDifferentiable) {
  Tensor x = f64({1, 2, 3}, Shape{3});
  GradientTape tape;
  tape.watch(x);
  Tensor l = nn::compute_average_loss(x * x, {.global_batch_size = 6});
  expect_values(tape.gradient(l, x), {2.0 / 6, 4.0 / 6, 6.0 / 6});
}

// ---- identifiers, config, errors ----

TEST(Losses, GetByName) {
  EXPECT_EQ(get("sparse_categorical_crossentropy")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(get("categorical_crossentropy")->name(), "categorical_crossentropy");
  EXPECT_EQ(get("binary_crossentropy")->name(), "binary_crossentropy");
  EXPECT_EQ(get("mse")->name(), "mean_squared_error");
  EXPECT_EQ(get("MSE")->name(), "mean_squared_error");
  EXPECT_EQ(get("mean_squared_error")->reduction(), Reduction::SUM_OVER_BATCH_SIZE);  // Keras 3's default
  try {
    get("squared_hinge");
    FAIL() << "unknown loss accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'squared_hinge'"), std::string::npos) << msg;
    for (const char* name :
         {"sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse"})
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(Losses, GetConfig) {
  auto c =
      SparseCategoricalCrossentropy({.from_logits = true, .reduction = Reduction::SUM, .name = "xent"})->get_config();
  EXPECT_EQ(c["name"], "xent");
  EXPECT_EQ(c["reduction"], "sum");
  EXPECT_EQ(c["from_logits"], true);
  EXPECT_EQ(CategoricalCrossentropy({.label_smoothing = 0.1})->get_config()["label_smoothing"], 0.1);
  EXPECT_EQ(MeanSquaredError()->get_config()["reduction"], "sum_over_batch_size");  // Keras 3 has no "auto"
}

TEST(Losses, ShapeErrorsNameBothShapes) {
  auto sparse = SparseCategoricalCrossentropy({.from_logits = true});
  try {
    (*sparse)(i64({0, 1, 2}, Shape{3}), f32(kLogits, k23));
    FAIL() << "labels of the wrong length accepted";
  } catch (const InvalidArgumentError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  }
  EXPECT_THROW((*sparse)(i64({0, 3}, Shape{2}), f32(kLogits, k23)), InvalidArgumentError);  // label out of range
  EXPECT_THROW((*CategoricalCrossentropy())(f32({1, 0}, Shape{1, 2}), f32(kProbs, k23)), InvalidArgumentError);
  EXPECT_THROW((*MeanSquaredError())(f32({1, 2, 3}, Shape{3}), f32(kProbs, k23)), InvalidArgumentError);
  EXPECT_THROW(CategoricalCrossentropy({.label_smoothing = 2})->call(f32(kProbs, k23), f32(kProbs, k23)), ValueError);
}

}  // namespace
}  // namespace lockstep::keras::losses
