// Keras metrics (tf.keras.metrics): Mean and Sum of values, and the accuracies and cross-entropy that
// compile(metrics=...) names. Metrics are update/result/reset objects that accumulate in double and never
// record on a GradientTape. A metric created in a strategy's scope is sync-on-read, as TF's metric variables
// are: every replica accumulates its own, and result() outside strategy.run sums them over every replica of
// every worker.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/registry.h"
#include "lockstep/tensor/tensor.h"
#include "lockstep/train/trackable.h"

namespace lockstep::distribute {
class Strategy;
}

namespace lockstep::keras::metrics {

class Metric {
 public:
  virtual ~Metric();
  // Accumulates a batch of predictions (the form compile(metrics=...) uses) into the calling replica's
  // accumulators; safe from every replica's thread at once. Mean and Sum take values instead, through their
  // own update_state(values, sample_weight), and throw ValueError here.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {});
  // update_state, then result() (TF's Metric.__call__): `eval_accuracy(labels, predictions)`.
  double operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {});
  // The value so far; 0 before any update, as Keras. For a metric created in a strategy's scope, called
  // outside strategy.run (cross-replica context) it is the value over every replica of every worker: under
  // MultiWorkerMirroredStrategy a collective that every worker must call, as in TF (call it on every worker,
  // then print on the chief only if you like); inside strategy.run, the calling replica's value.
  double result() const;
  // Clears the accumulators of every replica (this worker's; every worker resets its own, as in TF).
  void reset_state();
  // TF 2's name for reset_state(), which the tutorials use.
  void reset_states() { reset_state(); }
  // This worker's accumulators (e.g. {total, count}), summed over its replicas; no communication. Summed
  // over workers and passed to result_of(), they give result() (fit() logs several metrics that way with one
  // all-reduce).
  std::vector<double> state() const;
  // Makes state() return `state`: the first replica's accumulators take it, the others are cleared.
  void set_state(const std::vector<double>& state);
  // The value that accumulators `state` stand for.
  virtual double result_of(const std::vector<double>& state) const = 0;
  const std::string& name() const { return name_; }
  // {"name", "dtype"} plus the metric's options.
  virtual nlohmann::json get_config() const;
  // The Keras class name ("SparseCategoricalAccuracy").
  virtual std::string class_name() const = 0;
  // The strategy whose scope created this metric (it must outlive the metric), or null: a metric created
  // outside any scope is local to its process, as before strategies existed.
  distribute::Strategy* strategy() const { return strategy_; }

 protected:
  // A metric of `state_size` accumulators, all 0; in a strategy's scope one set per local replica.
  Metric(std::string name, size_t state_size);
  // Adds one batch's accumulators to the calling replica's.
  void accumulate(const std::vector<double>& batch_state);

 private:
  size_t replica_slot() const;
  std::string name_;
  distribute::Strategy* strategy_ = nullptr;
  int num_workers_ = 1;
  mutable std::mutex mutex_;
  // One set of accumulators per local replica, so that threads never share one and the sum over replicas,
  // taken in replica order, does not depend on their timing.
  std::vector<std::vector<double>> replicas_;
};

// Weighted mean of values (keras.metrics.Mean). Values of rank > 1 are first averaged per sample (over
// all but the first axis); sample_weight is squeezed or expanded by a trailing size-1 axis, values are
// averaged down to its rank, and it is broadcast to them. State: {total, count}.
class MeanMetric : public Metric {
 public:
  explicit MeanMetric(std::string name = "mean") : Metric(std::move(name), 2) {}
  // Throws ValueError: a Mean takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  // update_state(values, sample_weight), then result(): `test_loss(t_loss)`.
  double operator()(const Tensor& values, const Tensor& sample_weight = {});
  double result_of(const std::vector<double>& state) const override;
  std::string class_name() const override { return "Mean"; }
};

// Weighted sum of values (keras.metrics.Sum). State: {total}.
class SumMetric : public Metric {
 public:
  explicit SumMetric(std::string name = "sum") : Metric(std::move(name), 1) {}
  // Throws ValueError: a Sum takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  double operator()(const Tensor& values, const Tensor& sample_weight = {});
  double result_of(const std::vector<double>& state) const override;
  std::string class_name() const override { return "Sum"; }
};

// The mean of fn(y_true, y_pred) over all samples, weighted by sample_weight (Keras' MeanMetricWrapper):
// the form of every accuracy and of the cross-entropy metric. `config` holds fn's options for get_config(),
// `class_name` the Keras class it stands for. State: {total, count}, as Mean's.
class MeanMetricWrapper : public Metric {
 public:
  using Fn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  MeanMetricWrapper(Fn fn, std::string name, nlohmann::json config = nlohmann::json::object(),
                    std::string class_name = "MeanMetricWrapper");
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result_of(const std::vector<double>& state) const override;
  nlohmann::json get_config() const override;
  std::string class_name() const override { return class_name_; }

 private:
  Fn fn_;
  nlohmann::json config_;
  std::string class_name_;
};

// ---- per-sample functions (keras.metrics.*_accuracy), float64 results of 1 (match) or 0 ----
// y_true == y_pred elementwise (y_true cast to y_pred's dtype).
Tensor accuracy(const Tensor& y_true, const Tensor& y_pred);
// y_true == argmax(y_pred, -1); y_true class indices [N] or [N, 1], any dtype.
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
// argmax(y_true, -1) == argmax(y_pred, -1).
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
// y_true == (y_pred > threshold).
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5);

// ---- factories ----
std::shared_ptr<MeanMetric> Mean(std::string name = "mean");
std::shared_ptr<SumMetric> Sum(std::string name = "sum");
std::shared_ptr<Metric> Accuracy(std::string name = "accuracy");
std::shared_ptr<Metric> SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy");
std::shared_ptr<Metric> CategoricalAccuracy(std::string name = "categorical_accuracy");
std::shared_ptr<Metric> BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5);
// An options struct rather than (from_logits, name), so that a name is never taken for the bool.
struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  std::string name = "sparse_categorical_crossentropy";
};
// The mean of losses::sparse_categorical_crossentropy.
std::shared_ptr<Metric> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});

// Every metric class lockstep has, by Keras class name, with Keras' short names ("sparse_categorical_accuracy").
const Registry<std::shared_ptr<Metric>>& registry();

// A metric from its compile() name. "accuracy"/"acc" (named as given) follows the loss, by its name():
// sparse_categorical_crossentropy -> SparseCategoricalAccuracy, categorical_crossentropy ->
// CategoricalAccuracy, binary_crossentropy -> BinaryAccuracy; for any other or no loss it follows the
// shapes of each batch as Keras does: y_pred's last axis 1 -> binary, y_true of lower rank (or last axis 1)
// -> sparse categorical, else categorical. Other names are registry()'s: a short name (any case) or a class name,
// with default options. Unknown names raise ValueError listing the short names.
std::shared_ptr<Metric> get(const std::string& identifier, const std::string& loss_name = "");

// A metric in a checkpoint (tf.train.Checkpoint(metric=...)): each worker's accumulators, per worker.
train::TrackablePtr make_trackable(const std::shared_ptr<Metric>& metric);

}  // namespace lockstep::keras::metrics
