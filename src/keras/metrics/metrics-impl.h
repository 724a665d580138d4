// What the metrics share: Keras 3's reduce_to_samplewise_values weighting, Mean's accumulators, and their checks.
#pragma once
#include <tuple>
#include <utility>
#include <vector>

#include "lockstep/keras/losses/loss.h"
#include "lockstep/keras/metrics/metric.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::keras::metrics::detail {

using raw_ops::BinaryOp;

inline Tensor to_double(const Tensor& x) {
  return x.dtype() == DType::float64 ? x : raw_ops::cast(x, DType::float64);
}

// Keras' reduce_to_samplewise_values: the values, weighted, reduced to at most one per sample, and the
// weights reduced alike (undefined without weights). `mean` picks the reduction: Mean averages, Sum adds.
inline std::pair<Tensor, Tensor> samplewise(const Tensor& values, const Tensor& sample_weight, bool mean) {
  auto reduce_from = [mean](const Tensor& x, int64_t first_axis) {
    std::vector<int64_t> axes;
    for (int64_t a = first_axis; a < x.rank(); ++a) axes.push_back(a);
    return mean ? raw_ops::mean(x, axes) : raw_ops::sum(x, axes);
  };
  Tensor v = to_double(values), w;
  if (sample_weight.defined()) {
    std::tie(v, w) = losses::squeeze_or_expand_to_same_rank(v, to_double(sample_weight));
    if (v.rank() > w.rank()) v = reduce_from(v, w.rank());
    w = raw_ops::broadcast_to(w, v.shape());
    v = raw_ops::binary(BinaryOp::mul, v, w);
    if (w.rank() > 1) w = reduce_from(w, 1);
  }
  if (v.rank() > 1) v = reduce_from(v, 1);
  return {v, w};
}

// Mean's accumulators for one batch of values: {weighted total, total weight (or number of samples)}.
inline std::vector<double> mean_of_batch(const Tensor& values, const Tensor& sample_weight) {
  auto [v, w] = samplewise(values, sample_weight, /*mean=*/true);
  double count = v.rank() == 0 ? 1.0 : static_cast<double>(v.dim(0));
  if (w.defined()) count = raw_ops::sum(w).item<double>();
  return {raw_ops::sum(v).item<double>(), count};
}

// total / count, 0 before any count.
inline double mean_result(const std::vector<double>& state) {
  return state.at(1) == 0 ? 0 : state[0] / state[1];
}

inline void check_values(const Metric& m, const Tensor& values) {
  LS_CHECK(values.defined(), ValueError, "metric '", m.name(), "': update_state got undefined values");
}

[[noreturn]] inline void throw_takes_values(const Metric& m) {
  throw ValueError(make_message("metric '", m.name(),
                                "' accumulates values: call update_state(values, sample_weight) on it, not "
                                "update_state(y_true, y_pred, sample_weight)"));
}

}  // namespace lockstep::keras::metrics::detail
