// keras.metrics.SparseCategoricalCrossentropy: the mean of losses::sparse_categorical_crossentropy.
#include "lockstep/keras/metrics/probabilistic_metrics.h"

#include "lockstep/keras/losses/losses.h"
#include "lockstep/keras/metrics/mean_metric_wrapper.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

std::shared_ptr<Metric> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions o) {
  return std::make_shared<MeanMetricWrapper>(
      [from_logits = o.from_logits](const Tensor& t, const Tensor& p) {
        return losses::sparse_categorical_crossentropy(t, p, from_logits);
      },
      std::move(o.name), nlohmann::json{{"from_logits", o.from_logits}}, "SparseCategoricalCrossentropy");
}

}  // namespace lockstep::keras::metrics
