// Keras losses as in Keras 3 (keras/losses/losses.py and the TensorFlow backend's cross-entropies), composed
// of differentiable ops, and the Loss objects that wrap them, each with its parameter table and factory.
#include "lockstep/keras/losses/losses.h"

#include <cmath>
#include <functional>

#include "lockstep/autograd/ops.h"
#include "losses-impl.h"

namespace lockstep::keras::losses {

using detail::as_dtype;
using detail::dtype_param;
using detail::from_logits_param;
using detail::label_smoothing_param;
using detail::last_axis_param;
using detail::name_param;
using detail::options_from;
using detail::reduction_param;
using detail::reduction_params;
using detail::without_last_axis;

namespace {

// Probabilities clipped into [kEpsilon, 1 - kEpsilon], so that their logs stay finite.
Tensor clip_probabilities(const Tensor& p) {
  return minimum(maximum(p, scalar(kEpsilon, p.dtype())), scalar(1 - kEpsilon, p.dtype()));
}

void check_same_shape(const char* loss, const Tensor& y_true, const Tensor& y_pred) {
  LS_CHECK(y_true.shape() == y_pred.shape(), InvalidArgumentError, loss, ": y_true of shape ", y_true.shape().str(),
           " does not match y_pred of shape ", y_pred.shape().str(), "; pass targets of the predictions' shape");
}

void check_has_classes(const char* loss, const Tensor& y_pred) {
  LS_CHECK(y_pred.rank() >= 1, InvalidArgumentError, loss,
           ": y_pred must have a last axis of classes or outputs, got a scalar");
}

}  // namespace

// ---- per-example functions ----

Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits) {
  check_has_classes("sparse_categorical_crossentropy", y_pred);
  const Shape batch = without_last_axis(y_pred.shape());
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1) labels = reshape(labels, batch);
  LS_CHECK(labels.shape() == batch, InvalidArgumentError, "sparse_categorical_crossentropy: labels of shape ",
           y_true.shape().str(), " do not fit y_pred of shape ", y_pred.shape().str(), "; expected labels of shape ",
           batch.str(), " (or with a trailing axis of 1)");
  // Keras casts labels of any dtype to int64 (floats truncate).
  if (labels.dtype() != DType::int32) labels = as_dtype(labels, DType::int64);
  // From probabilities Keras (TF backend) takes log(clip(p)) as logits, which normalises by the sum.
  Tensor logits = from_logits ? y_pred : log(clip_probabilities(y_pred));
  Tensor loss = nn::sparse_softmax_cross_entropy_with_logits(reshape(labels, Shape{batch.numel()}),
                                                             reshape(logits, Shape{batch.numel(), y_pred.dim(-1)}));
  return reshape(loss, batch);
}

Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing) {
  check_has_classes("categorical_crossentropy", y_pred);
  check_same_shape("categorical_crossentropy", y_true, y_pred);
  LS_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError,
           "categorical_crossentropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  Tensor t = as_dtype(y_true, y_pred.dtype());
  if (label_smoothing > 0) t = t * (1 - label_smoothing) + label_smoothing / static_cast<double>(y_pred.dim(-1));
  if (from_logits) return -reduce_sum(t * nn::log_softmax(y_pred, -1), {-1});
  // Keras rescales probabilities to sum 1 before clipping.
  Tensor p = y_pred / reduce_sum(y_pred, {-1}, /*keepdims=*/true);
  return -reduce_sum(t * log(clip_probabilities(p)), {-1});
}

Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits, double label_smoothing) {
  check_has_classes("binary_crossentropy", y_pred);
  LS_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError,
           "binary_crossentropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  auto [t, x] = squeeze_or_expand_to_same_rank(as_dtype(y_true, y_pred.dtype()), y_pred);
  check_same_shape("binary_crossentropy", t, x);
  if (label_smoothing > 0) t = t * (1 - label_smoothing) + 0.5 * label_smoothing;
  Tensor bce;
  if (from_logits) {
    // tf.nn.sigmoid_cross_entropy_with_logits: max(x, 0) - x t + log(1 + exp(-|x|)), written with where()
    // so that the gradient at x = 0 is TF's sigmoid(0) - t.
    Tensor zero = zeros_like(x), nonnegative = greater_equal(x, zero);
    bce = where(nonnegative, x, zero) - x * t + log(1.0 + exp(where(nonnegative, -x, x)));
  } else {
    Tensor p = clip_probabilities(x);
    bce = -(t * log(p) + (1.0 - t) * log(1.0 - p));
  }
  return reduce_mean(bce, {-1});
}

namespace {
// y_true in y_pred's dtype and both at one rank (Keras' LossFunctionWrapper), checked to have one shape.
std::pair<Tensor, Tensor> aligned(const char* loss, const Tensor& y_true, const Tensor& y_pred) {
  check_has_classes(loss, y_pred);
  auto [t, p] = squeeze_or_expand_to_same_rank(as_dtype(y_true, y_pred.dtype()), y_pred);
  check_same_shape(loss, t, p);
  return {t, p};
}

// A regression loss: `elementwise` of the difference, averaged over the last axis.
Tensor mean_over_last_axis(const char* loss, const Tensor& y_true, const Tensor& y_pred,
                           const std::function<Tensor(const Tensor&)>& elementwise) {
  auto [t, p] = aligned(loss, y_true, y_pred);
  return reduce_mean(elementwise(p - t), {-1});
}

// log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)), written with where() so that the gradient is
// sigmoid(x) everywhere (TF's softplus).
Tensor softplus(const Tensor& x) {
  Tensor zero = zeros_like(x), nonnegative = greater_equal(x, zero);
  return where(nonnegative, x, zero) + log(1.0 + exp(where(nonnegative, -x, x)));
}
}  // namespace

Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred) {
  return mean_over_last_axis("mean_squared_error", y_true, y_pred, square);
}

Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred) {
  return mean_over_last_axis("mean_absolute_error", y_true, y_pred, abs);
}

Tensor huber(const Tensor& y_true, const Tensor& y_pred, double delta) {
  LS_CHECK(delta > 0 && std::isfinite(delta), ValueError, "huber: delta must be a finite number > 0, got ", delta);
  return mean_over_last_axis("huber", y_true, y_pred, [delta](const Tensor& error) {
    // Keras' order of operations, so that the values agree to the last bit where float32 allows.
    const Tensor abs_error = abs(error);
    const Tensor quadratic = square(error) * 0.5, linear = abs_error * delta - 0.5 * delta * delta;
    return where(less_equal(abs_error, scalar(delta, abs_error.dtype())), quadratic, linear);
  });
}

Tensor kl_divergence(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = aligned("kl_divergence", y_true, y_pred);
  auto clip = [](const Tensor& x) { return minimum(maximum(x, scalar(kEpsilon, x.dtype())), scalar(1, x.dtype())); };
  t = clip(t);
  return reduce_sum(t * log(t / clip(p)), {-1});
}

Tensor poisson(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = aligned("poisson", y_true, y_pred);
  return reduce_mean(p - t * log(p + kEpsilon), {-1});
}

Tensor log_cosh(const Tensor& y_true, const Tensor& y_pred) {
  return mean_over_last_axis("log_cosh", y_true, y_pred, [](const Tensor& x) {
    return x + softplus(x * -2.0) - std::log(2.0);
  });
}

Tensor hinge(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = aligned("hinge", y_true, y_pred);
  // Keras decides on the whole batch: labels that are all 0 or 1 become -1 or 1. Decided on the device, without
  // reading the labels back: neither_count is 0 exactly when every label is 0 or 1.
  const Tensor neither = cast(not_equal(t, zeros_like(t)), t.dtype()) * cast(not_equal(t, ones_like(t)), t.dtype());
  const Tensor binary = equal(reduce_sum(neither), scalar(0, t.dtype()));
  t = where(binary, 2.0 * t - 1.0, t);
  return reduce_mean(maximum(1.0 - t * p, zeros_like(p)), {-1});
}

LossFunctionWrapper::LossFunctionWrapper(Fn fn, Reduction reduction, std::string name, nlohmann::json config,
                                         std::string class_name)
    : Loss(reduction, std::move(name)), fn_(std::move(fn)), config_(std::move(config)),
      class_name_(std::move(class_name)) {}

nlohmann::json LossFunctionWrapper::get_config() const {
  nlohmann::json c = Loss::get_config();
  c.update(config_);
  return c;
}

std::shared_ptr<Loss> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions o) {
  return std::make_shared<LossFunctionWrapper>(
      [from_logits = o.from_logits](const Tensor& t, const Tensor& p) {
        return sparse_categorical_crossentropy(t, p, from_logits);
      },
      o.reduction, o.name, nlohmann::json{{"from_logits", o.from_logits}}, "SparseCategoricalCrossentropy");
}
std::vector<Param> sparse_categorical_crossentropy_params() {
  const SparseCategoricalCrossentropyOptions d;
  return {from_logits_param(d.from_logits), Param::fixed("ignore_class", nullptr, "not implemented by lockstep"),
          reduction_param(d.reduction), last_axis_param(), name_param(d.name), dtype_param()};
}
std::shared_ptr<Loss> sparse_categorical_crossentropy_from_config(const nlohmann::json& c) {
  return SparseCategoricalCrossentropy(options_from<SparseCategoricalCrossentropyOptions>(c));
}

namespace {
template <typename Options>
std::vector<Param> crossentropy_params() {
  const Options d;
  return {from_logits_param(d.from_logits), label_smoothing_param(d.label_smoothing), last_axis_param(),
          reduction_param(d.reduction), name_param(d.name), dtype_param()};
}
}  // namespace

std::shared_ptr<Loss> CategoricalCrossentropy(CategoricalCrossentropyOptions o) {
  return std::make_shared<LossFunctionWrapper>(
      [from_logits = o.from_logits, ls = o.label_smoothing](const Tensor& t, const Tensor& p) {
        return categorical_crossentropy(t, p, from_logits, ls);
      },
      o.reduction, o.name, nlohmann::json{{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}},
      "CategoricalCrossentropy");
}
std::vector<Param> categorical_crossentropy_params() {
  return crossentropy_params<CategoricalCrossentropyOptions>();
}
std::shared_ptr<Loss> categorical_crossentropy_from_config(const nlohmann::json& c) {
  return CategoricalCrossentropy(options_from<CategoricalCrossentropyOptions>(c));
}

std::shared_ptr<Loss> BinaryCrossentropy(BinaryCrossentropyOptions o) {
  return std::make_shared<LossFunctionWrapper>(
      [from_logits = o.from_logits, ls = o.label_smoothing](const Tensor& t, const Tensor& p) {
        return binary_crossentropy(t, p, from_logits, ls);
      },
      o.reduction, o.name, nlohmann::json{{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}},
      "BinaryCrossentropy");
}
std::vector<Param> binary_crossentropy_params() { return crossentropy_params<BinaryCrossentropyOptions>(); }
std::shared_ptr<Loss> binary_crossentropy_from_config(const nlohmann::json& c) {
  return BinaryCrossentropy(options_from<BinaryCrossentropyOptions>(c));
}

std::shared_ptr<Loss> MeanSquaredError(MeanSquaredErrorOptions o) {
  return std::make_shared<LossFunctionWrapper>(mean_squared_error, o.reduction, o.name, nlohmann::json::object(),
                                               "MeanSquaredError");
}
std::vector<Param> mean_squared_error_params() { return reduction_params<MeanSquaredErrorOptions>(); }
std::shared_ptr<Loss> mean_squared_error_from_config(const nlohmann::json& c) {
  return MeanSquaredError(options_from<MeanSquaredErrorOptions>(c));
}

std::shared_ptr<Loss> MeanAbsoluteError(MeanAbsoluteErrorOptions o) {
  return std::make_shared<LossFunctionWrapper>(mean_absolute_error, o.reduction, o.name, nlohmann::json::object(),
                                               "MeanAbsoluteError");
}
std::vector<Param> mean_absolute_error_params() { return reduction_params<MeanAbsoluteErrorOptions>(); }
std::shared_ptr<Loss> mean_absolute_error_from_config(const nlohmann::json& c) {
  return MeanAbsoluteError(options_from<MeanAbsoluteErrorOptions>(c));
}

std::shared_ptr<Loss> Huber(HuberOptions o) {
  LS_CHECK(o.delta > 0 && std::isfinite(o.delta), ValueError, "Huber: delta must be a finite number > 0, got ", o.delta);
  return std::make_shared<LossFunctionWrapper>(
      [delta = o.delta](const Tensor& t, const Tensor& p) { return huber(t, p, delta); }, o.reduction, o.name,
      nlohmann::json{{"delta", o.delta}}, "Huber");
}
std::vector<Param> huber_params() {
  const HuberOptions d;
  return {{"delta", d.delta, "where the loss turns from quadratic to linear"}, reduction_param(d.reduction),
          name_param(d.name), dtype_param()};
}
std::shared_ptr<Loss> huber_from_config(const nlohmann::json& c) {
  HuberOptions o = options_from<HuberOptions>(c);
  o.delta = c.at("delta").get<double>();
  return Huber(o);
}

std::shared_ptr<Loss> KLDivergence(KLDivergenceOptions o) {
  return std::make_shared<LossFunctionWrapper>(kl_divergence, o.reduction, o.name, nlohmann::json::object(),
                                               "KLDivergence");
}
std::vector<Param> kl_divergence_params() { return reduction_params<KLDivergenceOptions>(); }
std::shared_ptr<Loss> kl_divergence_from_config(const nlohmann::json& c) {
  return KLDivergence(options_from<KLDivergenceOptions>(c));
}

std::shared_ptr<Loss> Poisson(PoissonOptions o) {
  return std::make_shared<LossFunctionWrapper>(poisson, o.reduction, o.name, nlohmann::json::object(), "Poisson");
}
std::vector<Param> poisson_params() { return reduction_params<PoissonOptions>(); }
std::shared_ptr<Loss> poisson_from_config(const nlohmann::json& c) {
  return Poisson(options_from<PoissonOptions>(c));
}

std::shared_ptr<Loss> LogCosh(LogCoshOptions o) {
  return std::make_shared<LossFunctionWrapper>(log_cosh, o.reduction, o.name, nlohmann::json::object(), "LogCosh");
}
std::vector<Param> log_cosh_params() { return reduction_params<LogCoshOptions>(); }
std::shared_ptr<Loss> log_cosh_from_config(const nlohmann::json& c) {
  return LogCosh(options_from<LogCoshOptions>(c));
}

std::shared_ptr<Loss> Hinge(HingeOptions o) {
  return std::make_shared<LossFunctionWrapper>(hinge, o.reduction, o.name, nlohmann::json::object(), "Hinge");
}
std::vector<Param> hinge_params() { return reduction_params<HingeOptions>(); }
std::shared_ptr<Loss> hinge_from_config(const nlohmann::json& c) {
  return Hinge(options_from<HingeOptions>(c));
}

}  // namespace lockstep::keras::losses
