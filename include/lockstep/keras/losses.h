// Keras losses (tf.keras.losses): cross-entropies and mean squared error as per-example functions and as
// Loss objects with sample weights and reductions, plus tf.nn.compute_average_loss for custom loops.
// All are built from differentiable ops, so a GradientTape differentiates them w.r.t. y_pred.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "lockstep/keras/registry.h"
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

// A Loss from a per-example function (Keras' LossFunctionWrapper); `config` holds the function's options
// for get_config().
class LossFunctionWrapper : public Loss {
 public:
  using Fn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  LossFunctionWrapper(Fn fn, Reduction reduction, std::string name, nlohmann::json config = nlohmann::json::object(),
                      std::string class_name = "LossFunctionWrapper");
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override { return fn_(y_true, y_pred); }
  nlohmann::json get_config() const override;
  std::string class_name() const override { return class_name_; }

 private:
  Fn fn_;
  nlohmann::json config_;
  std::string class_name_;
};

// ---- per-example functions (keras.losses.sparse_categorical_crossentropy etc.) ----
// Clipping bound for probabilities (keras.backend.epsilon()).
inline constexpr double kEpsilon = 1e-7;

// y_true: class indices [...] or [..., 1], any integer or float dtype (cast to int64, as Keras does);
// y_pred: [..., classes] logits or probabilities. Returns [...]. From probabilities Keras computes
// -log(p[label] / sum(p)) with p clipped to [kEpsilon, 1 - kEpsilon].
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false);
// y_true: one-hot (or soft) targets, y_pred's shape [..., classes]; label_smoothing in [0, 1] moves
// targets towards 1/classes. Probabilities are normalised to sum 1, then clipped. Returns [...].
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                double label_smoothing = 0);
// Elementwise binary cross-entropy averaged over the last axis: [N, 1] -> [N]. label_smoothing moves
// targets towards 0.5.
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                           double label_smoothing = 0);
// mean((y_pred - y_true)^2) over the last axis: [N, D] -> [N].
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred);
// mean(|y_pred - y_true|) over the last axis: [N, D] -> [N].
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred);
// The Huber loss averaged over the last axis, [N, D] -> [N]: of each error e, e^2 / 2 where |e| <= delta, else
// delta * |e| - delta^2 / 2 (Keras' huber).
Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta = 1.0);

// Keras' squeeze_or_expand_to_same_rank: when the ranks differ by one and the longer one ends in a size-1
// axis, that axis is dropped, or (if the shorter one has rank 1 and expand_rank_1) one is added to the
// shorter. Other pairs are returned unchanged.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1 = true);

// ---- Loss objects ----
struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "sparse_categorical_crossentropy";
};
struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "categorical_crossentropy";
};
struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "binary_crossentropy";
};
struct MeanSquaredErrorOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "mean_squared_error";
};
struct MeanAbsoluteErrorOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "mean_absolute_error";
};
std::shared_ptr<Loss> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
std::shared_ptr<Loss> CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
std::shared_ptr<Loss> BinaryCrossentropy(BinaryCrossentropyOptions options = {});
std::shared_ptr<Loss> MeanSquaredError(MeanSquaredErrorOptions options = {});
std::shared_ptr<Loss> MeanAbsoluteError(MeanAbsoluteErrorOptions options = {});
struct HuberOptions {
  double delta = 1.0;  // where the loss turns from quadratic to linear; > 0
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "huber_loss";
};
std::shared_ptr<Loss> Huber(HuberOptions options = {});

// Every loss lockstep has, by Keras class name, with Keras' short names ("sparse_categorical_crossentropy", "mse").
const Registry<std::shared_ptr<Loss>>& registry();
// A loss by short name (any case) or class name with default options; ValueError listing the short names otherwise.
std::shared_ptr<Loss> get(const std::string& identifier);
// Keras' losses.deserialize: {"class_name", "config"} as get_config() writes it (missing options take their
// defaults), or a name as get() takes it; null gives no loss.
std::shared_ptr<Loss> from_config(const nlohmann::json& config);

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
