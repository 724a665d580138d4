// Keras losses as in Keras 3 (keras/losses/losses.py and the TensorFlow backend's cross-entropies), composed
// of differentiable ops; Loss.__call__'s sample weighting and reductions; tf.nn.compute_average_loss.
#include "lockstep/keras/losses.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "lockstep/autograd/ops.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::keras::losses {

namespace {

Tensor as_dtype(const Tensor& x, DType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}

// Probabilities clipped into [kEpsilon, 1 - kEpsilon], so that their logs stay finite.
Tensor clip_probabilities(const Tensor& p) {
  return minimum(maximum(p, scalar(kEpsilon, p.dtype())), scalar(1 - kEpsilon, p.dtype()));
}

Shape without_last_axis(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 1));
}

Shape with_last_axis_1(const Shape& s) {
  std::vector<int64_t> dims = s.dims();
  dims.push_back(1);
  return Shape(std::move(dims));
}

void check_same_shape(const char* loss, const Tensor& y_true, const Tensor& y_pred) {
  LS_CHECK(y_true.shape() == y_pred.shape(), InvalidArgumentError, loss, ": y_true of shape ", y_true.shape().str(),
           " does not match y_pred of shape ", y_pred.shape().str(), "; pass targets of the predictions' shape");
}

void check_has_classes(const char* loss, const Tensor& y_pred) {
  LS_CHECK(y_pred.rank() >= 1, InvalidArgumentError, loss,
           ": y_pred must have a last axis of classes or outputs, got a scalar");
}

// values * sample_weight, the weight given a trailing axis when it has one axis fewer (or its trailing
// axis of 1 dropped when it has one more), then broadcast.
Tensor apply_sample_weight(const Tensor& values, const Tensor& sample_weight) {
  if (!sample_weight.defined()) return values;
  Tensor w = as_dtype(sample_weight, values.dtype());
  // TF 2's squeeze_or_expand_dimensions: per-example weights [N] weight every element of losses [N, T].
  if (w.rank() == values.rank() + 1 && w.dim(-1) == 1)
    w = reshape(w, without_last_axis(w.shape()));
  else if (w.rank() > 0 && w.rank() + 1 == values.rank())
    w = reshape(w, with_last_axis_1(w.shape()));
  return values * w;
}

}  // namespace

std::string reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::AUTO:
      return "auto";
    case Reduction::NONE:
      return "none";
    case Reduction::SUM:
      return "sum";
    case Reduction::SUM_OVER_BATCH_SIZE:
      return "sum_over_batch_size";
  }
  return "auto";
}

std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& x1, const Tensor& x2, bool expand_rank_1) {
  auto fit = [expand_rank_1](Tensor& longer, Tensor& shorter) {
    if (longer.rank() != shorter.rank() + 1 || longer.dim(-1) != 1) return;
    if (shorter.rank() == 1 && expand_rank_1)
      shorter = reshape(shorter, with_last_axis_1(shorter.shape()));
    else
      longer = reshape(longer, without_last_axis(longer.shape()));
  };
  Tensor a = x1, b = x2;
  fit(a, b);
  fit(b, a);
  return {a, b};
}

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

// ---- Loss objects ----

Loss::~Loss() = default;

namespace {
thread_local int t_keras_loop = 0;  // > 0 inside fit/evaluate, which scale losses for the strategy themselves
}

KerasLoopScope::KerasLoopScope() { ++t_keras_loop; }
KerasLoopScope::~KerasLoopScope() { --t_keras_loop; }

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  // TF's rule: inside a custom loop under a strategy, a mean over the replica's batch would be averaged again
  // over replicas by the summed gradients; only SUM and NONE say what they mean there.
  const bool averaging = reduction_ == Reduction::AUTO || reduction_ == Reduction::SUM_OVER_BATCH_SIZE;
  LS_CHECK(!averaging || t_keras_loop > 0 || !distribute::in_replica_context() ||
               distribute::get_strategy().num_replicas_in_sync() == 1,
           ValueError, "Please use Reduction::SUM or Reduction::NONE for loss reduction when losses are used with a "
           "distribution strategy outside compile()/fit() (loss '", name_, "' uses ", reduction_name(reduction_),
           "); with NONE, average with nn::compute_average_loss(per_example_loss, {.global_batch_size = ...})");
  // Keras computes losses in float32: a mixed_bfloat16 model's bfloat16 output is widened first.
  const Tensor pred = y_pred.dtype() == DType::bfloat16 ? cast(y_pred, DType::float32) : y_pred;
  Tensor values = apply_sample_weight(call(y_true, pred), sample_weight);
  if (reduction_ == Reduction::NONE || values.rank() == 0) return values;
  Tensor total = reduce_sum(values);
  if (reduction_ == Reduction::SUM) return total;
  // An empty batch gives 0, as TF 2's divide_no_nan, not NaN.
  return total / static_cast<double>(std::max<int64_t>(values.numel(), 1));
}

nlohmann::json Loss::get_config() const {
  return {{"name", name_}, {"reduction", reduction_name(reduction_)}};
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

namespace {
// A loss's Options from its complete config.
template <typename Options>
Options options_from(const nlohmann::json& c) {
  Options o;
  if constexpr (requires { o.from_logits; }) o.from_logits = c.at("from_logits").get<bool>();
  if constexpr (requires { o.label_smoothing; }) o.label_smoothing = c.at("label_smoothing").get<double>();
  const std::string reduction = c.at("reduction");
  for (Reduction r : {Reduction::NONE, Reduction::SUM, Reduction::SUM_OVER_BATCH_SIZE})
    if (reduction_name(r) == reduction) o.reduction = r;
  o.name = c.at("name");
  return o;
}

// The arguments the loss classes share, their defaults read from the options struct where it has them.
Param from_logits(bool d) { return {"from_logits", d, "y_pred holds logits, not probabilities"}; }
Param label_smoothing(double d) { return {"label_smoothing", d, "moves the labels towards 1/classes by this much"}; }
Param reduction(Reduction d) {
  return {"reduction", reduction_name(d), "how the per-example losses become one: sum_over_batch_size, sum, none",
          {"sum_over_batch_size", "sum", "none", "auto"}};
}
Param name(const std::string& d) { return {"name", d, "the loss's name"}; }
Param dtype() { return Param::fixed("dtype", nullptr, "lockstep's losses compute in float32", {"float32"}); }
Param last_axis() { return Param::fixed("axis", -1, "lockstep's losses reduce the last axis"); }

template <typename Options>
std::vector<Param> crossentropy_params() {
  const Options d;
  return {from_logits(d.from_logits), label_smoothing(d.label_smoothing), last_axis(), reduction(d.reduction), name(d.name),
          dtype()};
}
template <typename Options>
std::vector<Param> reduction_params() {
  const Options d;
  return {reduction(d.reduction), name(d.name), dtype()};
}
std::vector<Param> huber_params() {
  const HuberOptions d;
  return {{"delta", d.delta, "where the loss turns from quadratic to linear"}, reduction(d.reduction), name(d.name),
          dtype()};
}
std::vector<Param> sparse_categorical_crossentropy_params() {
  const SparseCategoricalCrossentropyOptions d;
  return {from_logits(d.from_logits), Param::fixed("ignore_class", nullptr, "not implemented by lockstep"),
          reduction(d.reduction), last_axis(), name(d.name), dtype()};
}
}  // namespace

const Registry<std::shared_ptr<Loss>>& registry() {
  static const Registry<std::shared_ptr<Loss>> r(
      "loss", {{"SparseCategoricalCrossentropy",
                [](const nlohmann::json& c) {
                  return SparseCategoricalCrossentropy(options_from<SparseCategoricalCrossentropyOptions>(c));
                },
                {"sparse_categorical_crossentropy"},
                sparse_categorical_crossentropy_params()},
               {"CategoricalCrossentropy",
                [](const nlohmann::json& c) {
                  return CategoricalCrossentropy(options_from<CategoricalCrossentropyOptions>(c));
                },
                {"categorical_crossentropy"},
                crossentropy_params<CategoricalCrossentropyOptions>()},
               {"BinaryCrossentropy",
                [](const nlohmann::json& c) { return BinaryCrossentropy(options_from<BinaryCrossentropyOptions>(c)); },
                {"binary_crossentropy"},
                crossentropy_params<BinaryCrossentropyOptions>()},
               {"MeanSquaredError",
                [](const nlohmann::json& c) { return MeanSquaredError(options_from<MeanSquaredErrorOptions>(c)); },
                {"mse", "mean_squared_error"},
                reduction_params<MeanSquaredErrorOptions>()},
               {"MeanAbsoluteError",
                [](const nlohmann::json& c) { return MeanAbsoluteError(options_from<MeanAbsoluteErrorOptions>(c)); },
                {"mae", "mean_absolute_error"},
                reduction_params<MeanAbsoluteErrorOptions>()},
               {"Huber",
                [](const nlohmann::json& c) {
                  const auto base = options_from<MeanSquaredErrorOptions>(c);  // reduction and name
                  return Huber({.delta = c.at("delta").get<double>(), .reduction = base.reduction, .name = base.name});
                },
                {"huber", "huber_loss"},
                huber_params()}});
  return r;
}

std::shared_ptr<Loss> get(const std::string& identifier) {
  return registry().get(identifier);
}

std::shared_ptr<Loss> from_config(const nlohmann::json& config) {
  if (config.is_null()) return nullptr;
  if (config.is_string()) return get(config.get<std::string>());  // compile(loss="mse") saves the name
  return registry().from_config(config.at("class_name").get<std::string>(), config.at("config"));
}

}  // namespace lockstep::keras::losses

namespace lockstep::nn {

int64_t current_num_replicas_in_sync() { return distribute::get_strategy().num_replicas_in_sync(); }

Tensor compute_average_loss(const Tensor& per_example_loss, const AverageLossOptions& options) {
  LS_CHECK(per_example_loss.rank() >= 1, ValueError,
           "Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1, got shape ",
           per_example_loss.shape().str());
  LS_CHECK(options.global_batch_size >= 0, ValueError, "global_batch_size must be positive, got ",
           options.global_batch_size);
  Tensor loss = keras::losses::apply_sample_weight(per_example_loss, options.sample_weight);
  const int64_t global_batch_size = options.global_batch_size > 0
                                        ? options.global_batch_size
                                        : per_example_loss.dim(0) * current_num_replicas_in_sync();
  // A replica with an empty batch contributes 0 rather than failing TF's positivity assertion.
  return reduce_sum(loss) / static_cast<double>(std::max<int64_t>(global_batch_size, 1));
}

Tensor scale_regularization_loss(const Tensor& regularization_loss) {
  return regularization_loss * (1.0 / static_cast<double>(current_num_replicas_in_sync()));
}

}  // namespace lockstep::nn
