// The loss registry: each loss's parameter table (Keras' arguments, defaults from its options struct), its
// factory from a config, and get / from_config.
#include "lockstep/keras/losses/registry.h"

#include "lockstep/keras/losses.h"

namespace lockstep::keras::losses {

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
