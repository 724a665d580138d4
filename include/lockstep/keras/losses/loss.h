// The base of the Keras losses (keras.losses.Loss): sample weights and reductions, Keras' rank matching, and
// tf.nn.compute_average_loss for custom loops.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::losses {

// AUTO means SUM_OVER_BATCH_SIZE, as in TF 2 outside a distribution strategy's custom loop; Keras 3 has only the
// latter, lockstep's default.
enum class Reduction { AUTO, NONE, SUM, SUM_OVER_BATCH_SIZE };
// "auto", "none", "sum", "sum_over_batch_size".
std::string reduction_name(Reduction reduction);

// Marks Keras' own training and test loops on this thread: there AUTO/SUM_OVER_BATCH_SIZE losses are allowed
// under a strategy (the loop scales them by 1 / num_replicas_in_sync); elsewhere they are refused, as in TF.
class KerasLoopScope {
 public:
  KerasLoopScope();
  ~KerasLoopScope();
  KerasLoopScope(const KerasLoopScope&) = delete;
  KerasLoopScope& operator=(const KerasLoopScope&) = delete;
};

class Loss {
 public:
  virtual ~Loss();
  // Keras' Loss.__call__: per-example losses (call()) times sample_weight, which gains a trailing axis
  // when it has one axis fewer than the losses (weights [N] for losses [N, T], as TF 2) or loses a trailing
  // axis of 1 when it has one more, and is then broadcast; then reduced: NONE -> the
  // weighted per-example tensor, SUM -> its sum, SUM_OVER_BATCH_SIZE and AUTO -> sum / number of
  // elements (0 for an empty batch). A scalar per-example result is returned as is.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) const;
  // Per-example losses, differentiable w.r.t. y_pred: [batch] for y_pred [batch, classes].
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;
  Reduction reduction() const { return reduction_; }
  const std::string& name() const { return name_; }
  // {"name", "reduction"} plus the loss's options.
  virtual nlohmann::json get_config() const;
  // The Keras class name ("SparseCategoricalCrossentropy"), saved with get_config() in a model's compile config.
  virtual std::string class_name() const = 0;

 protected:
  Loss(Reduction reduction, std::string name) : reduction_(reduction), name_(std::move(name)) {}

 private:
  Reduction reduction_;
  std::string name_;
};

// Keras' squeeze_or_expand_to_same_rank: when the ranks differ by one and the longer one ends in a size-1
// axis, that axis is dropped, or (if the shorter one has rank 1 and expand_rank_1) one is added to the
// shorter. Other pairs are returned unchanged.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1 = true);

}  // namespace lockstep::keras::losses

namespace lockstep::nn {

// The number of replicas that sum their gradients each step (tf.distribute.get_strategy()
// .num_replicas_in_sync): the current strategy's, 1 outside any.
int64_t current_num_replicas_in_sync();

struct AverageLossOptions {
  // The batch size summed over all replicas; 0 means per_example_loss.dim(0) * current_num_replicas_in_sync().
  int64_t global_batch_size = 0;
  // Per-example weights, fitted to per_example_loss as Loss::operator() does; undefined = 1.
  Tensor sample_weight = {};
};
// sum(per_example_loss * sample_weight) / global_batch_size (tf.nn.compute_average_loss): summed over
// replicas it gives the mean over the global batch. per_example_loss must have rank >= 1.
Tensor compute_average_loss(const Tensor& per_example_loss, const AverageLossOptions& options = {});
// regularization_loss / current_num_replicas_in_sync() (tf.nn.scale_regularization_loss): added on every
// replica, it sums back to the loss once.
Tensor scale_regularization_loss(const Tensor& regularization_loss);

}  // namespace lockstep::nn
