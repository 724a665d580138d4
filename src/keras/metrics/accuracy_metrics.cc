// Keras 3's accuracy functions, computed with raw ops in float64, and the accuracy metrics made from them.
#include "lockstep/keras/metrics/accuracy_metrics.h"

#include "lockstep/keras/metrics/mean_metric_wrapper.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

using raw_ops::BinaryOp;
using detail::to_double;

namespace {

// 1.0 where a == b, else 0.0, both compared as float64.
Tensor matches(const Tensor& a, const Tensor& b) {
  return raw_ops::cast(raw_ops::binary(BinaryOp::equal, to_double(a), to_double(b)), DType::float64);
}

}  // namespace

Tensor accuracy(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = losses::squeeze_or_expand_to_same_rank(y_true, y_pred);
  return matches(t, p);
}

Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  Tensor t = y_true;
  // Labels [N, 1] are compared as [N] and the matches given back their shape, as Keras does.
  const bool squeeze = t.rank() == y_pred.rank() && t.rank() > 0 && t.dim(-1) == 1;
  if (squeeze)
    t = raw_ops::reshape(t, Shape(std::vector<int64_t>(t.shape().dims().begin(), t.shape().dims().end() - 1)));
  Tensor m = matches(t, raw_ops::argmax(y_pred, -1));
  return squeeze ? raw_ops::reshape(m, y_true.shape()) : m;
}

Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  return matches(raw_ops::argmax(y_true, -1), raw_ops::argmax(y_pred, -1));
}

Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold) {
  auto [t, p] = losses::squeeze_or_expand_to_same_rank(y_true, y_pred);
  return matches(t, raw_ops::binary(BinaryOp::greater, p, scalar(threshold, p.dtype())));
}

std::shared_ptr<Metric> Accuracy(std::string name) {
  return std::make_shared<MeanMetricWrapper>(accuracy, std::move(name), nlohmann::json::object(), "Accuracy");
}
std::shared_ptr<Metric> SparseCategoricalAccuracy(std::string name) {
  return std::make_shared<MeanMetricWrapper>(sparse_categorical_accuracy, std::move(name), nlohmann::json::object(),
                                             "SparseCategoricalAccuracy");
}
std::shared_ptr<Metric> CategoricalAccuracy(std::string name) {
  return std::make_shared<MeanMetricWrapper>(categorical_accuracy, std::move(name), nlohmann::json::object(),
                                             "CategoricalAccuracy");
}
std::shared_ptr<Metric> BinaryAccuracy(std::string name, double threshold) {
  return std::make_shared<MeanMetricWrapper>(
      [threshold](const Tensor& t, const Tensor& p) { return binary_accuracy(t, p, threshold); }, std::move(name),
      nlohmann::json{{"threshold", threshold}}, "BinaryAccuracy");
}

}  // namespace lockstep::keras::metrics
