// The metric base: per-replica accumulators, sync-on-read results over replicas and workers, state and reset.
#include "lockstep/keras/metrics/metric.h"

#include "lockstep/distribute/strategy/strategy.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

using detail::throw_takes_values;

Metric::Metric(std::string name, size_t state_size) : name_(std::move(name)) {
  // Created in a strategy's scope: sync-on-read over that strategy's replicas and workers (TF's rule).
  if (distribute::has_strategy()) {
    strategy_ = &distribute::get_strategy();
    num_workers_ = strategy_->num_workers();
  }
  const int replicas = strategy_ ? strategy_->num_local_replicas() : 1;
  replicas_.assign(static_cast<size_t>(replicas), std::vector<double>(state_size, 0.0));
}

Metric::~Metric() = default;

void Metric::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_takes_values(*this);
}

double Metric::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  update_state(y_true, y_pred, sample_weight);
  return result();
}

size_t Metric::replica_slot() const {
  // Only a replica of this metric's own strategy has a slot of its own; any other thread uses the first.
  if (!strategy_ || !distribute::in_replica_context() || &distribute::get_strategy() != strategy_) return 0;
  return static_cast<size_t>(distribute::replica_id_in_sync_group());
}

void Metric::accumulate(const std::vector<double>& batch_state) {
  std::lock_guard lock(mutex_);
  std::vector<double>& mine = replicas_[replica_slot()];
  for (size_t i = 0; i < mine.size(); ++i) mine[i] += batch_state[i];
}

double Metric::result() const {
  if (strategy_ && distribute::in_replica_context()) {
    std::lock_guard lock(mutex_);
    return result_of(replicas_[replica_slot()]);
  }
  std::vector<double> total = state();
  if (num_workers_ > 1) strategy_->all_reduce_sum(total);
  return result_of(total);
}

void Metric::reset_state() {
  std::lock_guard lock(mutex_);
  for (std::vector<double>& r : replicas_) std::fill(r.begin(), r.end(), 0.0);
}

std::vector<double> Metric::state() const {
  std::lock_guard lock(mutex_);
  std::vector<double> total = replicas_[0];
  for (size_t r = 1; r < replicas_.size(); ++r)
    for (size_t i = 0; i < total.size(); ++i) total[i] += replicas_[r][i];
  return total;
}

void Metric::set_state(const std::vector<double>& state) {
  std::lock_guard lock(mutex_);
  LS_CHECK(state.size() == replicas_[0].size(), ValueError, "metric '", name_, "' has ", replicas_[0].size(),
           " state values, got ", state.size(), "; pass what its state() returned");
  for (std::vector<double>& r : replicas_) std::fill(r.begin(), r.end(), 0.0);
  replicas_[0] = state;
}

nlohmann::json Metric::get_config() const {
  return {{"name", name_}, {"dtype", "float32"}};
}

}  // namespace lockstep::keras::metrics
