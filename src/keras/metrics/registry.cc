// The metric registry (each metric's parameter table and factory) and compile()'s resolution of "accuracy".
#include "lockstep/keras/metrics/registry.h"

#include <cctype>

#include "lockstep/keras/metrics.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

namespace {
// Every metric's arguments: its name (Keras' default `name`) and its dtype, which lockstep's metrics fix.
std::vector<Param> metric_params(const std::string& name, std::vector<Param> more = {}) {
  std::vector<Param> out{{"name", name, "the metric's name, in logs and the history"},
                         Param::fixed("dtype", nullptr, "lockstep's metrics accumulate in float32", {"float32"})};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}
std::string name_of(const nlohmann::json& c) { return c.at("name"); }
}  // namespace

const Registry<std::shared_ptr<Metric>>& registry() {
  static const Registry<std::shared_ptr<Metric>> r(
      "metric",
      {{"Mean", [](const nlohmann::json& c) { return Mean(name_of(c)); }, {}, metric_params("mean")},
       {"Sum", [](const nlohmann::json& c) { return Sum(name_of(c)); }, {}, metric_params("sum")},
       {"Accuracy", [](const nlohmann::json& c) { return Accuracy(name_of(c)); }, {"accuracy", "acc"},
        metric_params("accuracy")},
       {"SparseCategoricalAccuracy", [](const nlohmann::json& c) { return SparseCategoricalAccuracy(name_of(c)); },
        {"sparse_categorical_accuracy"}, metric_params("sparse_categorical_accuracy")},
       {"CategoricalAccuracy", [](const nlohmann::json& c) { return CategoricalAccuracy(name_of(c)); },
        {"categorical_accuracy"}, metric_params("categorical_accuracy")},
       {"BinaryAccuracy",
        [](const nlohmann::json& c) { return BinaryAccuracy(name_of(c), c.at("threshold").get<double>()); },
        {"binary_accuracy"},
        metric_params("binary_accuracy", {{"threshold", 0.5, "a prediction above it counts as 1"}})},
       {"SparseCategoricalCrossentropy",
        [](const nlohmann::json& c) {
          return SparseCategoricalCrossentropy({.from_logits = c.at("from_logits").get<bool>(), .name = name_of(c)});
        },
        {"sparse_categorical_crossentropy"},
        metric_params(SparseCategoricalCrossentropyOptions{}.name,
                      {{"from_logits", SparseCategoricalCrossentropyOptions{}.from_logits,
                        "y_pred holds logits, not probabilities"},
                       Param::fixed("ignore_class", nullptr, "not implemented by lockstep"),
                       Param::fixed("axis", -1, "lockstep's metric reduces the last axis")})}});
  return r;
}

std::shared_ptr<Metric> get(const std::string& identifier, const std::string& loss_name) {
  auto lower = [](const std::string& s) {
    std::string out;
    for (unsigned char c : s) out += static_cast<char>(std::tolower(c));
    return out;
  };
  const std::string id = lower(identifier), loss = lower(loss_name);
  if (id == "accuracy" || id == "acc") {
    if (loss == "sparse_categorical_crossentropy") return SparseCategoricalAccuracy(identifier);
    if (loss == "categorical_crossentropy") return CategoricalAccuracy(identifier);
    if (loss == "binary_crossentropy") return BinaryAccuracy(identifier);
    // TF 2's compile_utils rule, from the shapes of each batch.
    return std::make_shared<MeanMetricWrapper>(
        [](const Tensor& t, const Tensor& p) {
          const int64_t pred_last = p.rank() > 0 ? p.dim(-1) : 1, true_last = t.rank() > 0 ? t.dim(-1) : 1;
          if (pred_last == 1) return binary_accuracy(t, p);
          if (t.rank() < p.rank() || (true_last == 1 && pred_last > 1)) return sparse_categorical_accuracy(t, p);
          return categorical_accuracy(t, p);
        },
        identifier);
  }
  return registry().get(identifier);
}

}  // namespace lockstep::keras::metrics
