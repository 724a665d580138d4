// Keras 3 metrics: Mean and Sum with reduce_to_samplewise_values' weighting, MeanMetricWrapper and the
// accuracy functions, compile()'s resolution of "accuracy", and the per-replica accumulators that make metrics
// created in a strategy's scope sync-on-read. Computed with raw ops, accumulated in double.
#include "lockstep/keras/metrics.h"

#include <cctype>
#include <tuple>

#include "lockstep/autograd/tape.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/losses.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::keras::metrics {

namespace {

using raw_ops::BinaryOp;

Tensor to_double(const Tensor& x) {
  return x.dtype() == DType::float64 ? x : raw_ops::cast(x, DType::float64);
}

// 1.0 where a == b, else 0.0, both compared as float64.
Tensor matches(const Tensor& a, const Tensor& b) {
  return raw_ops::cast(raw_ops::binary(BinaryOp::equal, to_double(a), to_double(b)), DType::float64);
}

// Keras' reduce_to_samplewise_values: the values, weighted, reduced to at most one per sample, and the
// weights reduced alike (undefined without weights). `mean` picks the reduction: Mean averages, Sum adds.
std::pair<Tensor, Tensor> samplewise(const Tensor& values, const Tensor& sample_weight, bool mean) {
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
std::vector<double> mean_of_batch(const Tensor& values, const Tensor& sample_weight) {
  auto [v, w] = samplewise(values, sample_weight, /*mean=*/true);
  double count = v.rank() == 0 ? 1.0 : static_cast<double>(v.dim(0));
  if (w.defined()) count = raw_ops::sum(w).item<double>();
  return {raw_ops::sum(v).item<double>(), count};
}

// total / count, 0 before any count.
double mean_result(const std::vector<double>& state) {
  return state.at(1) == 0 ? 0 : state[0] / state[1];
}

void check_values(const Metric& m, const Tensor& values) {
  LS_CHECK(values.defined(), ValueError, "metric '", m.name(), "': update_state got undefined values");
}

[[noreturn]] void throw_takes_values(const Metric& m) {
  throw ValueError(make_message("metric '", m.name(),
                                "' accumulates values: call update_state(values, sample_weight) on it, not "
                                "update_state(y_true, y_pred, sample_weight)"));
}

}  // namespace

// ---- Metric ----

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

// ---- Mean, Sum ----

void MeanMetric::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_takes_values(*this);
}

void MeanMetric::update_state(const Tensor& values, const Tensor& sample_weight) {
  check_values(*this, values);
  if (values.numel() == 0) return;
  NoGradGuard no_grad;
  accumulate(mean_of_batch(values, sample_weight));
}

double MeanMetric::operator()(const Tensor& values, const Tensor& sample_weight) {
  update_state(values, sample_weight);
  return result();
}

double MeanMetric::result_of(const std::vector<double>& state) const {
  return mean_result(state);
}

void SumMetric::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_takes_values(*this);
}

void SumMetric::update_state(const Tensor& values, const Tensor& sample_weight) {
  check_values(*this, values);
  if (values.numel() == 0) return;
  NoGradGuard no_grad;
  accumulate({raw_ops::sum(samplewise(values, sample_weight, /*mean=*/false).first).item<double>()});
}

double SumMetric::operator()(const Tensor& values, const Tensor& sample_weight) {
  update_state(values, sample_weight);
  return result();
}

double SumMetric::result_of(const std::vector<double>& state) const {
  return state.at(0);
}

// ---- MeanMetricWrapper ----

MeanMetricWrapper::MeanMetricWrapper(Fn fn, std::string name, nlohmann::json config, std::string class_name)
    : Metric(std::move(name), 2), fn_(std::move(fn)), config_(std::move(config)), class_name_(std::move(class_name)) {}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  LS_CHECK(y_true.defined() && y_pred.defined(), ValueError, "metric '", name(),
           "': update_state needs defined y_true and y_pred");
  if (y_true.numel() == 0 || y_pred.numel() == 0) return;
  NoGradGuard no_grad;
  const Tensor values = fn_(y_true, y_pred);
  if (values.numel() > 0) accumulate(mean_of_batch(values, sample_weight));
}

double MeanMetricWrapper::result_of(const std::vector<double>& state) const {
  return mean_result(state);
}

nlohmann::json MeanMetricWrapper::get_config() const {
  nlohmann::json c = Metric::get_config();
  c.update(config_);
  return c;
}

// ---- per-sample functions ----

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

// ---- factories ----

std::shared_ptr<MeanMetric> Mean(std::string name) {
  return std::make_shared<MeanMetric>(std::move(name));
}
std::shared_ptr<SumMetric> Sum(std::string name) {
  return std::make_shared<SumMetric>(std::move(name));
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
std::shared_ptr<Metric> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions o) {
  return std::make_shared<MeanMetricWrapper>(
      [from_logits = o.from_logits](const Tensor& t, const Tensor& p) {
        return losses::sparse_categorical_crossentropy(t, p, from_logits);
      },
      std::move(o.name), nlohmann::json{{"from_logits", o.from_logits}}, "SparseCategoricalCrossentropy");
}

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
