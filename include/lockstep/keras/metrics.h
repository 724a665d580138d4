// Keras metrics (tf.keras.metrics): Mean and Sum of values, and the accuracies and cross-entropy that
// compile(metrics=...) names. Metrics are update/result/reset objects that accumulate in double, never
// record on a GradientTape, and expose their accumulators so replicas and workers can sum them.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::metrics {

class Metric {
 public:
  virtual ~Metric();
  // Accumulates a batch of predictions (the form compile(metrics=...) uses). Mean and Sum take values
  // instead, through their own update_state(values, sample_weight), and throw ValueError here.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {});
  // The value so far; 0 before any update, as Keras.
  virtual double result() const = 0;
  virtual void reset_state() = 0;
  // The accumulators (e.g. {total, count}): summing them over replicas and calling set_state merges them.
  virtual std::vector<double> state() const = 0;
  virtual void set_state(const std::vector<double>& state) = 0;
  const std::string& name() const { return name_; }
  // {"name", "dtype"} plus the metric's options.
  virtual nlohmann::json get_config() const;

 protected:
  explicit Metric(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// Weighted mean of values (keras.metrics.Mean). Values of rank > 1 are first averaged per sample (over
// all but the first axis); sample_weight is squeezed or expanded by a trailing size-1 axis, values are
// averaged down to its rank, and it is broadcast to them. State: {total, count}.
class MeanMetric : public Metric {
 public:
  explicit MeanMetric(std::string name = "mean") : Metric(std::move(name)) {}
  // Throws ValueError: a Mean takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  double result() const override { return count_ == 0 ? 0 : total_ / count_; }
  void reset_state() override { total_ = count_ = 0; }
  std::vector<double> state() const override { return {total_, count_}; }
  void set_state(const std::vector<double>& state) override;

 private:
  double total_ = 0, count_ = 0;
};

// Weighted sum of values (keras.metrics.Sum). State: {total}.
class SumMetric : public Metric {
 public:
  explicit SumMetric(std::string name = "sum") : Metric(std::move(name)) {}
  // Throws ValueError: a Sum takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  double result() const override { return total_; }
  void reset_state() override { total_ = 0; }
  std::vector<double> state() const override { return {total_}; }
  void set_state(const std::vector<double>& state) override;

 private:
  double total_ = 0;
};

// The mean of fn(y_true, y_pred) over all samples, weighted by sample_weight (Keras' MeanMetricWrapper):
// the form of every accuracy and of the cross-entropy metric. `config` holds fn's options for get_config().
class MeanMetricWrapper : public Metric {
 public:
  using Fn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  MeanMetricWrapper(Fn fn, std::string name, nlohmann::json config = nlohmann::json::object());
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result() const override { return mean_.result(); }
  void reset_state() override { mean_.reset_state(); }
  std::vector<double> state() const override { return mean_.state(); }
  void set_state(const std::vector<double>& state) override { mean_.set_state(state); }
  nlohmann::json get_config() const override;

 private:
  Fn fn_;
  MeanMetric mean_;
  nlohmann::json config_;
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

// A metric from its compile() name. "accuracy"/"acc" (named as given) follows the loss, by its name():
// sparse_categorical_crossentropy -> SparseCategoricalAccuracy, categorical_crossentropy ->
// CategoricalAccuracy, binary_crossentropy -> BinaryAccuracy; for any other or no loss it follows the
// shapes of each batch as Keras does: y_pred's last axis 1 -> binary, y_true of lower rank (or last axis 1)
// -> sparse categorical, else categorical. Other names: "sparse_categorical_accuracy",
// "categorical_accuracy", "binary_accuracy", "sparse_categorical_crossentropy" (any case). Unknown
// names raise ValueError listing the valid ones.
std::shared_ptr<Metric> get(const std::string& identifier, const std::string& loss_name = "");

}  // namespace lockstep::keras::metrics
