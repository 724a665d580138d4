// Keras' losses (keras.losses): cross-entropies, mean squared and absolute error, Huber, KL divergence, Poisson,
// log-cosh and hinge, as per-example functions and as Loss objects, each with its registry entry (its Keras arguments
// and its factory from a config). All are built from differentiable ops, so a GradientTape differentiates them
// w.r.t. y_pred.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/losses/loss.h"
#include "lockstep/keras/registry.h"
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
// sum(t * log(t / p)) over the last axis, t and p (probabilities) clipped to [kEpsilon, 1]: [N, D] -> [N].
Tensor kl_divergence(const Tensor& y_true, const Tensor& y_pred);
// mean(p - t * log(p + kEpsilon)) over the last axis, for counts t and predicted rates p: [N, D] -> [N].
Tensor poisson(const Tensor& y_true, const Tensor& y_pred);
// mean(log(cosh(p - t))) over the last axis, as Keras computes it (x + softplus(-2x) - log 2): [N, D] -> [N].
Tensor log_cosh(const Tensor& y_true, const Tensor& y_pred);
// mean(max(1 - t * p, 0)) over the last axis: [N, D] -> [N]. Labels are -1 or 1; when every label is 0 or 1
// they are taken as 2t - 1 (Keras' convert_binary_labels_to_hinge).
Tensor hinge(const Tensor& y_true, const Tensor& y_pred);

// ---- Loss objects, each with its registry entry (registry.cc): its Keras arguments (defaults from its options
// struct) and the loss a complete config (every argument of the table present) describes ----
struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "sparse_categorical_crossentropy";
};
std::shared_ptr<Loss> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
std::vector<Param> sparse_categorical_crossentropy_params();
std::shared_ptr<Loss> sparse_categorical_crossentropy_from_config(const nlohmann::json& config);

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "categorical_crossentropy";
};
std::shared_ptr<Loss> CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
std::vector<Param> categorical_crossentropy_params();
std::shared_ptr<Loss> categorical_crossentropy_from_config(const nlohmann::json& config);

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "binary_crossentropy";
};
std::shared_ptr<Loss> BinaryCrossentropy(BinaryCrossentropyOptions options = {});
std::vector<Param> binary_crossentropy_params();
std::shared_ptr<Loss> binary_crossentropy_from_config(const nlohmann::json& config);

struct MeanSquaredErrorOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "mean_squared_error";
};
std::shared_ptr<Loss> MeanSquaredError(MeanSquaredErrorOptions options = {});
std::vector<Param> mean_squared_error_params();
std::shared_ptr<Loss> mean_squared_error_from_config(const nlohmann::json& config);

struct MeanAbsoluteErrorOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "mean_absolute_error";
};
std::shared_ptr<Loss> MeanAbsoluteError(MeanAbsoluteErrorOptions options = {});
std::vector<Param> mean_absolute_error_params();
std::shared_ptr<Loss> mean_absolute_error_from_config(const nlohmann::json& config);

struct HuberOptions {
  double delta = 1.0;  // where the loss turns from quadratic to linear; > 0
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "huber_loss";
};
std::shared_ptr<Loss> Huber(HuberOptions options = {});
std::vector<Param> huber_params();
std::shared_ptr<Loss> huber_from_config(const nlohmann::json& config);

struct KLDivergenceOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "kl_divergence";
};
std::shared_ptr<Loss> KLDivergence(KLDivergenceOptions options = {});
std::vector<Param> kl_divergence_params();
std::shared_ptr<Loss> kl_divergence_from_config(const nlohmann::json& config);

struct PoissonOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "poisson";
};
std::shared_ptr<Loss> Poisson(PoissonOptions options = {});
std::vector<Param> poisson_params();
std::shared_ptr<Loss> poisson_from_config(const nlohmann::json& config);

struct LogCoshOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "log_cosh";
};
std::shared_ptr<Loss> LogCosh(LogCoshOptions options = {});
std::vector<Param> log_cosh_params();
std::shared_ptr<Loss> log_cosh_from_config(const nlohmann::json& config);

struct HingeOptions {
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  std::string name = "hinge";
};
std::shared_ptr<Loss> Hinge(HingeOptions options = {});
std::vector<Param> hinge_params();
std::shared_ptr<Loss> hinge_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::losses
