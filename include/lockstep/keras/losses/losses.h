// Keras' losses (keras.losses): cross-entropies, mean squared and absolute error and Huber, as per-example
// functions and as Loss objects. All are built from differentiable ops, so a GradientTape differentiates them
// w.r.t. y_pred.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/keras/losses/loss.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::losses {

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

}  // namespace lockstep::keras::losses
