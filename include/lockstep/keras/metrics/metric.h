// The base of the Keras metrics (keras.metrics.Metric): update/result/reset objects that accumulate in double and
// never record on a GradientTape. A metric created in a strategy's scope is sync-on-read, as TF's metric variables
// are: every replica accumulates its own, and result() outside strategy.run sums them over every replica of every
// worker.
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

// A metric in a checkpoint (tf.train.Checkpoint(metric=...)): each worker's accumulators, per worker.
train::TrackablePtr make_trackable(const std::shared_ptr<Metric>& metric);

}  // namespace lockstep::keras::metrics
