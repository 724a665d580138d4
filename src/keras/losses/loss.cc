// Keras 3's Loss.__call__: sample weighting and reductions, the refusal of averaging reductions under a strategy
// outside fit; squeeze_or_expand_to_same_rank; tf.nn.compute_average_loss.
#include "lockstep/keras/losses/loss.h"

#include <algorithm>

#include "lockstep/autograd/ops.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "losses-impl.h"

namespace lockstep::keras::losses {

using detail::as_dtype;
using detail::without_last_axis;

namespace {

Shape with_last_axis_1(const Shape& s) {
  std::vector<int64_t> dims = s.dims();
  dims.push_back(1);
  return Shape(std::move(dims));
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
