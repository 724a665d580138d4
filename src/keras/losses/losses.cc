// Keras losses as in Keras 3 (keras/losses/losses.py and the TensorFlow backend's cross-entropies), composed
// of differentiable ops, and the Loss objects that wrap them.
#include "lockstep/keras/losses/losses.h"

#include <cmath>
#include <functional>

#include "lockstep/autograd/ops.h"
#include "losses-impl.h"

namespace lockstep::keras::losses {

using detail::as_dtype;
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
// A regression loss: `elementwise` of the difference, averaged over the last axis.
Tensor mean_over_last_axis(const char* loss, const Tensor& y_true, const Tensor& y_pred,
                           const std::function<Tensor(const Tensor&)>& elementwise) {
  check_has_classes(loss, y_pred);
  auto [t, p] = squeeze_or_expand_to_same_rank(as_dtype(y_true, y_pred.dtype()), y_pred);
  check_same_shape(loss, t, p);
  return reduce_mean(elementwise(p - t), {-1});
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

std::shared_ptr<Loss> CategoricalCrossentropy(CategoricalCrossentropyOptions o) {
  return std::make_shared<LossFunctionWrapper>(
      [from_logits = o.from_logits, ls = o.label_smoothing](const Tensor& t, const Tensor& p) {
        return categorical_crossentropy(t, p, from_logits, ls);
      },
      o.reduction, o.name, nlohmann::json{{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}},
      "CategoricalCrossentropy");
}

std::shared_ptr<Loss> BinaryCrossentropy(BinaryCrossentropyOptions o) {
  return std::make_shared<LossFunctionWrapper>(
      [from_logits = o.from_logits, ls = o.label_smoothing](const Tensor& t, const Tensor& p) {
        return binary_crossentropy(t, p, from_logits, ls);
      },
      o.reduction, o.name, nlohmann::json{{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}},
      "BinaryCrossentropy");
}

std::shared_ptr<Loss> MeanSquaredError(MeanSquaredErrorOptions o) {
  return std::make_shared<LossFunctionWrapper>(mean_squared_error, o.reduction, o.name, nlohmann::json::object(),
                                               "MeanSquaredError");
}

std::shared_ptr<Loss> Huber(HuberOptions o) {
  LS_CHECK(o.delta > 0 && std::isfinite(o.delta), ValueError, "Huber: delta must be a finite number > 0, got ", o.delta);
  return std::make_shared<LossFunctionWrapper>(
      [delta = o.delta](const Tensor& t, const Tensor& p) { return huber(t, p, delta); }, o.reduction, o.name,
      nlohmann::json{{"delta", o.delta}}, "Huber");
}

std::shared_ptr<Loss> MeanAbsoluteError(MeanAbsoluteErrorOptions o) {
  return std::make_shared<LossFunctionWrapper>(mean_absolute_error, o.reduction, o.name, nlohmann::json::object(),
                                               "MeanAbsoluteError");
}

}  // namespace lockstep::keras::losses
