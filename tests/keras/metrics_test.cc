// Metrics on small hand-checked batches (the examples of the Keras documentation), sample weights,
// reset and state merging, empty batches, and compile()'s resolution of "accuracy".
#include "lockstep/keras/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lockstep/tensor/ops.h"

namespace lockstep::keras::metrics {
namespace {

using Vec = std::vector<double>;

Tensor f32(const Vec& v, const Shape& s) {
  return from_vector(std::vector<float>(v.begin(), v.end()), s);
}
Tensor i64(const std::vector<int64_t>& v, const Shape& s) {
  return from_vector(v, s);
}

TEST(Metrics, MeanAndSum) {
  auto mean = Mean();
  EXPECT_EQ(mean->name(), "mean");
  EXPECT_EQ(mean->result(), 0.0);  // nothing seen yet
  mean->update_state(f32({1, 3, 5, 7}, Shape{4}));
  EXPECT_DOUBLE_EQ(mean->result(), 4.0);
  mean->reset_state();
  mean->update_state(f32({1, 3, 5, 7}, Shape{4}), f32({1, 1, 0, 0}, Shape{4}));
  EXPECT_DOUBLE_EQ(mean->result(), 2.0);
  EXPECT_EQ(mean->state(), (Vec{4, 2}));
  // Values [N, K] are averaged per sample first, then weighted per sample.
  mean->reset_state();
  mean->update_state(f32({1, 3, 5, 7}, Shape{2, 2}), f32({3, 1}, Shape{2}));
  EXPECT_DOUBLE_EQ(mean->result(), (3 * 2.0 + 1 * 6.0) / 4);
  mean->update_state(scalar(10.0));
  EXPECT_EQ(mean->state(), (Vec{22, 5}));

  auto sum = Sum();
  sum->update_state(f32({1, 3, 5, 7}, Shape{4}));
  EXPECT_DOUBLE_EQ(sum->result(), 16.0);
  sum->update_state(f32({1, 3, 5, 7}, Shape{4}), f32({1, 1, 0, 0}, Shape{4, 1}));
  EXPECT_DOUBLE_EQ(sum->result(), 20.0);
  sum->update_state(i64({2, 3}, Shape{2}), scalar(2.0));
  EXPECT_DOUBLE_EQ(sum->result(), 30.0);
  sum->reset_state();
  EXPECT_EQ(sum->result(), 0.0);
}

TEST(Metrics, ValueMetricsRefusePredictions) {
  std::shared_ptr<Metric> mean = Mean("loss");
  try {
    mean->update_state(f32({1}, Shape{1}), f32({1}, Shape{1}));
    FAIL() << "Mean took predictions";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'loss'"), std::string::npos) << e.what();
  }
  std::shared_ptr<Metric> sum = Sum();
  EXPECT_THROW(sum->update_state(f32({1}, Shape{1}), f32({1}, Shape{1})), ValueError);
}

TEST(Metrics, SparseCategoricalAccuracy) {
  const Tensor y_pred = f32({0.1, 0.6, 0.3, 0.05, 0.95, 0}, Shape{2, 3});
  for (const Tensor& y_true :
       {f32({2, 1}, Shape{2, 1}), i64({2, 1}, Shape{2}), from_vector(std::vector<uint8_t>{2, 1}, Shape{2}),
        from_vector(std::vector<int32_t>{2, 1}, Shape{2, 1})}) {
    SCOPED_TRACE(y_true.str());
    auto m = SparseCategoricalAccuracy();
    m->update_state(y_true, y_pred);
    EXPECT_DOUBLE_EQ(m->result(), 0.5);
    m->reset_state();
    m->update_state(y_true, y_pred, f32({0.7, 0.3}, Shape{2}));
    EXPECT_NEAR(m->result(), 0.3, 1e-7);
  }
  // Ties go to the first maximum, as argmax does.
  auto m = SparseCategoricalAccuracy();
  m->update_state(i64({0, 1}, Shape{2}), f32({0.5, 0.5, 0, 0.2, 0.2, 0.2}, Shape{2, 3}));
  EXPECT_DOUBLE_EQ(m->result(), 0.5);
  EXPECT_EQ(m->name(), "sparse_categorical_accuracy");
}

TEST(Metrics, AccuracyCategoricalAndBinary) {
  auto acc = Accuracy();
  acc->update_state(i64({1, 2, 3, 4}, Shape{4, 1}), i64({0, 2, 3, 4}, Shape{4, 1}));
  EXPECT_DOUBLE_EQ(acc->result(), 0.75);
  acc->reset_state();
  acc->update_state(i64({1, 2, 3, 4}, Shape{4, 1}), i64({0, 2, 3, 4}, Shape{4, 1}), f32({1, 1, 0, 0}, Shape{4}));
  EXPECT_DOUBLE_EQ(acc->result(), 0.5);

  auto cat = CategoricalAccuracy();
  const Tensor onehot = f32({0, 0, 1, 0, 1, 0}, Shape{2, 3}), probs = f32({0.1, 0.9, 0.8, 0.05, 0.95, 0}, Shape{2, 3});
  cat->update_state(onehot, probs);
  EXPECT_DOUBLE_EQ(cat->result(), 0.5);
  cat->reset_state();
  cat->update_state(onehot, probs, f32({0.7, 0.3}, Shape{2}));
  EXPECT_NEAR(cat->result(), 0.3, 1e-7);

  auto bin = BinaryAccuracy();
  const Tensor t = f32({1, 1, 0, 0}, Shape{4, 1}), p = f32({0.98, 1, 0, 0.6}, Shape{4, 1});
  bin->update_state(t, p);
  EXPECT_DOUBLE_EQ(bin->result(), 0.75);
  bin->reset_state();
  bin->update_state(t, p, f32({1, 0, 0, 1}, Shape{4}));
  EXPECT_DOUBLE_EQ(bin->result(), 0.5);
  auto strict = BinaryAccuracy("strict", 0.99);
  strict->update_state(t, p);
  EXPECT_DOUBLE_EQ(strict->result(), 0.75);  // 0.98 is now a 0 and 0.6 is now right
  EXPECT_EQ(strict->get_config()["threshold"], 0.99);
}

TEST(Metrics, SparseCategoricalCrossentropy) {
  auto m = SparseCategoricalCrossentropy();
  const Tensor y_pred = f32({0.05, 0.95, 0, 0.1, 0.8, 0.1}, Shape{2, 3});
  m->update_state(i64({1, 2}, Shape{2}), y_pred);
  EXPECT_NEAR(m->result(), (-std::log(0.95) - std::log(0.1)) / 2, 1e-6);  // 1.177 in the Keras docs
  m->reset_state();
  m->update_state(i64({1, 2}, Shape{2}), y_pred, f32({0.3, 0.7}, Shape{2}));
  EXPECT_NEAR(m->result(), -0.3 * std::log(0.95) - 0.7 * std::log(0.1), 1e-6);

  auto logits = SparseCategoricalCrossentropy({.from_logits = true, .name = "xent"});
  logits->update_state(i64({0}, Shape{1}), f32({0, 0}, Shape{1, 2}));
  EXPECT_NEAR(logits->result(), std::log(2.0), 1e-6);
  EXPECT_EQ(logits->get_config()["from_logits"], true);
  EXPECT_EQ(logits->get_config()["name"], "xent");
}

TEST(Metrics, EmptyBatchesChangeNothing) {
  auto acc = SparseCategoricalAccuracy();
  acc->update_state(i64({}, Shape{0}), f32({}, Shape{0, 3}));
  EXPECT_EQ(acc->result(), 0.0);
  acc->update_state(i64({1}, Shape{1}), f32({0, 1, 0}, Shape{1, 3}));
  acc->update_state(i64({}, Shape{0}), f32({}, Shape{0, 3}), f32({}, Shape{0}));
  EXPECT_EQ(acc->result(), 1.0);
  auto mean = Mean();
  mean->update_state(f32({}, Shape{0}));
  EXPECT_EQ(mean->state(), (Vec{0, 0}));
}

TEST(Metrics, StatesOfReplicasMergeBySumming) {
  auto a = SparseCategoricalAccuracy(), b = SparseCategoricalAccuracy(), merged = SparseCategoricalAccuracy();
  a->update_state(i64({0, 1}, Shape{2}), f32({1, 0, 1, 0}, Shape{2, 2}));           // 1 of 2
  b->update_state(i64({1, 1, 0}, Shape{3}), f32({0, 1, 0, 1, 1, 0}, Shape{3, 2}));  // 3 of 3
  Vec sum = a->state();
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += b->state()[i];
  merged->set_state(sum);
  EXPECT_DOUBLE_EQ(merged->result(), 0.8);
  EXPECT_EQ(merged->state(), (Vec{4, 5}));
  EXPECT_THROW(merged->set_state({1}), ValueError);
  EXPECT_THROW(Sum()->set_state({1, 2}), ValueError);
}

TEST(Metrics, AccuracyIsResolvedFromTheLoss) {
  const Tensor probs = f32({0.1, 0.6, 0.3, 0.05, 0.95, 0}, Shape{2, 3});
  auto sparse = get("accuracy", "sparse_categorical_crossentropy");
  EXPECT_EQ(sparse->name(), "accuracy");
  sparse->update_state(i64({2, 1}, Shape{2}), probs);
  EXPECT_DOUBLE_EQ(sparse->result(), 0.5);

  auto categorical = get("acc", "categorical_crossentropy");
  EXPECT_EQ(categorical->name(), "acc");
  categorical->update_state(f32({0, 0, 1, 0, 1, 0}, Shape{2, 3}), probs);
  EXPECT_DOUBLE_EQ(categorical->result(), 0.5);

  auto binary = get("accuracy", "binary_crossentropy");
  binary->update_state(f32({1, 0}, Shape{2, 1}), f32({0.7, 0.7}, Shape{2, 1}));
  EXPECT_DOUBLE_EQ(binary->result(), 0.5);

  // Without a known loss, from the shapes as Keras does.
  auto by_shape = get("accuracy");
  by_shape->update_state(i64({2, 1}, Shape{2}), probs);  // labels of lower rank: sparse
  EXPECT_DOUBLE_EQ(by_shape->result(), 0.5);
  by_shape->update_state(i64({1}, Shape{1, 1}), f32({0.4}, Shape{1, 1}));  // one output: binary, 0.4 -> 0 != 1
  EXPECT_DOUBLE_EQ(by_shape->result(), 1.0 / 3);
  by_shape->update_state(f32({0, 1}, Shape{1, 2}), f32({0.2, 0.8}, Shape{1, 2}));  // same shapes: categorical
  EXPECT_DOUBLE_EQ(by_shape->result(), 2.0 / 4);

  EXPECT_EQ(get("sparse_categorical_accuracy")->name(), "sparse_categorical_accuracy");
  EXPECT_EQ(get("sparse_categorical_crossentropy")->name(), "sparse_categorical_crossentropy");
  try {
    get("f1");
    FAIL() << "unknown metric accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'f1'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'accuracy'"), std::string::npos) << msg;
  }
}

TEST(Metrics, GetConfig) {
  auto c = SparseCategoricalAccuracy("acc")->get_config();
  EXPECT_EQ(c["name"], "acc");
  EXPECT_EQ(c["dtype"], "float32");
  EXPECT_EQ(Mean("loss")->get_config()["name"], "loss");
}

}  // namespace
}  // namespace lockstep::keras::metrics
