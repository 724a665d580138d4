// Metrics under a strategy: created in its scope they are sync-on-read (each replica of a MirroredStrategy
// accumulates its own; result() outside strategy.run is over all of them), outside any scope they stay local;
// calling a metric updates it and returns the result; fit() on experimental_distribute_dataset's result.
#include <gtest/gtest.h>

#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::metrics {
namespace {

using distribute::MirroredStrategy;

Tensor labels(const std::vector<int64_t>& v) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())});
}
// Predictions [n, 2] whose argmax is `classes`.
Tensor predicting(const std::vector<int64_t>& classes) {
  std::vector<float> p;
  for (int64_t c : classes) p.insert(p.end(), {c == 0 ? 0.9f : 0.1f, c == 0 ? 0.1f : 0.9f});
  return from_vector(p, Shape{static_cast<int64_t>(classes.size()), 2});
}

TEST(SyncOnReadMetrics, ResultOutsideRunIsOverEveryReplica) {
  MirroredStrategy strategy({"/cpu:0", "/cpu:1", "/cpu:2"});
  std::shared_ptr<Metric> accuracy;
  std::shared_ptr<MeanMetric> loss;
  {
    auto scope = strategy.scope();
    accuracy = SparseCategoricalAccuracy("train_accuracy");
    loss = Mean("test_loss");
  }
  EXPECT_EQ(accuracy->strategy(), &strategy);
  // Replica r sees r + 1 examples of which r are right: 0/1, 1/2, 2/3.
  for (int step = 0; step < 10; ++step) {
    auto own = strategy.run([&] {
      const int r = distribute::replica_id_in_sync_group();
      std::vector<int64_t> truth(static_cast<size_t>(r + 1), 1), predicted = truth;
      predicted[0] = 0;
      accuracy->update_state(labels(truth), predicting(predicted));
      loss->update_state(full({r + 1}, static_cast<double>(r)));
      return accuracy->result();  // in replica context: this replica's own
    });
    EXPECT_EQ(own.values, (std::vector<double>{0.0, 0.5, 2.0 / 3}));
  }
  EXPECT_DOUBLE_EQ(accuracy->result(), 3.0 / 6);
  EXPECT_EQ(accuracy->state(), (std::vector<double>{30, 60}));
  EXPECT_DOUBLE_EQ(loss->result(), (0 * 1 + 1 * 2 + 2 * 3) / 6.0);
  accuracy->reset_states();
  EXPECT_EQ(accuracy->result(), 0.0);
  EXPECT_EQ(strategy.run([&] { return accuracy->state()[1]; }).values, (std::vector<double>{0, 0, 0}));
  // set_state gives the whole state to the first replica: state() and result() read it back.
  accuracy->set_state({1, 4});
  EXPECT_DOUBLE_EQ(accuracy->result(), 0.25);
  EXPECT_THROW(accuracy->set_state({1}), ValueError);
}

TEST(SyncOnReadMetrics, MetricsOutsideAnyScopeStayLocalAndThreadSafe) {
  MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
  auto accuracy = SparseCategoricalAccuracy();
  EXPECT_EQ(accuracy->strategy(), nullptr);
  for (int step = 0; step < 50; ++step)
    strategy.run([&] { accuracy->update_state(labels({1, 1}), predicting({1, 0})); });
  EXPECT_EQ(accuracy->state(), (std::vector<double>{100, 200}));  // every replica's update, none lost
  EXPECT_DOUBLE_EQ(accuracy->result(), 0.5);
}

TEST(SyncOnReadMetrics, CallingAMetricUpdatesItAndReturnsTheResult) {
  auto accuracy = SparseCategoricalAccuracy("eval_accuracy");
  EXPECT_DOUBLE_EQ((*accuracy)(labels({1, 0}), predicting({1, 1})), 0.5);
  EXPECT_DOUBLE_EQ((*accuracy)(labels({0, 0}), predicting({0, 0}), from_vector<float>({1, 0}, {2})), 2.0 / 3);
  auto mean = Mean();
  EXPECT_DOUBLE_EQ((*mean)(from_vector<float>({1, 3}, {2})), 2.0);
  EXPECT_DOUBLE_EQ((*mean)(scalar(8.0)), 4.0);
  EXPECT_DOUBLE_EQ((*mean)(scalar(0.0), scalar(0.0)), 4.0);  // weight 0 changes nothing
  auto sum = Sum();
  EXPECT_DOUBLE_EQ((*sum)(from_vector<float>({1, 3}, {2})), 4.0);
  Metric& as_metric = *mean;  // through the base class, a Mean still refuses predictions
  EXPECT_THROW(as_metric(labels({1}), predicting({1})), ValueError);
}

Sequential toy_model(distribute::Strategy& strategy) {
  utils::set_random_seed(7);
  auto scope = strategy.scope();
  Sequential model({Input({4}), layers::Dense(8, {.activation = "relu"}), layers::Dense(3)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}

data::Dataset toy_data() {
  Philox rng(5);
  Tensor x = random_uniform({96, 4}, rng);
  Tensor y = raw_ops::cast(random_uniform({96}, rng, 0, 3, DType::float64), DType::int64);
  return data::Dataset::from_tensor_slices(x, y).batch(16);
}

TEST(FitOnDistributedDataset, TrainsAsOnTheDatasetItself) {
  MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
  Sequential a = toy_model(strategy);
  auto plain = a.fit(toy_data(), {.epochs = 2, .verbose = 0});
  Sequential b = toy_model(strategy);
  auto distributed = b.fit(strategy.experimental_distribute_dataset(toy_data()), {.epochs = 2, .verbose = 0});
  EXPECT_EQ(distributed.history["loss"], plain.history["loss"]);
  EXPECT_EQ(distributed.history["accuracy"], plain.history["accuracy"]);
  auto wa = a.get_weights(), wb = b.get_weights();
  for (size_t i = 0; i < wa.size(); ++i)
    EXPECT_EQ(wb[i].to_vector<float>(), wa[i].to_vector<float>()) << "weight " << i;
}

TEST(FitOnDistributedDataset, RefusesAnotherStrategysDataset) {
  MirroredStrategy strategy({"/cpu:0", "/cpu:1"}), other({"/cpu:0", "/cpu:1"});
  Sequential model = toy_model(strategy);
  try {
    model.fit(other.experimental_distribute_dataset(toy_data()), {.verbose = 0});
    FAIL() << "fit() took another strategy's dataset";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("another strategy"), std::string::npos) << e.what();
  }
  auto from_function =
      strategy.distribute_datasets_from_function([](const distribute::InputContext&) { return toy_data(); });
  EXPECT_THROW(model.fit(from_function, {.verbose = 0}), ValueError);
  Sequential unscoped({Input({4}), layers::Dense(3)});
  unscoped.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  EXPECT_THROW(unscoped.fit(strategy.experimental_distribute_dataset(toy_data()), {.verbose = 0}), ValueError);
}

}  // namespace
}  // namespace lockstep::keras::metrics
