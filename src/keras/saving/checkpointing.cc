// Keras objects in checkpoints: a model (variables in order and input shape; per worker, its random layers'
// streams), an optimizer (iterations and slots), a metric (per worker, its accumulators) and fit()'s position (for
// BackupAndRestore).
#include <algorithm>
#include <optional>
#include <set>

#include "../models/models-impl.h"
#include "lockstep/core/logging.h"

namespace lockstep::keras {

namespace {

class ModelTrackable final : public train::Trackable {
 public:
  explicit ModelTrackable(Model model, std::shared_ptr<Model::State> state)
      : model_(std::move(model)), s_(std::move(state)) {}

  train::TrackableState save() const override {
    train::TrackableState out;
    nlohmann::json names = nlohmann::json::array();
    std::set<std::string> taken;
    for (const Variable& v : model_.variables()) {
      std::string name = v.name();
      for (int i = 1; !taken.insert(name).second; ++i) name = make_message(v.name(), "_", i);  // kept unique
      out.tensors.push_back({name, v.value().clone()});
      names.push_back(name);
    }
    out.values["variables"] = names;
    out.values["built"] = s_->built;
    if (s_->built) out.values["input_shape"] = s_->input_shape.dims();
    return out;
  }

  // Every random layer's streams, in layer order: each worker draws from its own replicas' streams, so each
  // saves the positions it reached. A model without random layers has none (on every worker alike).
  nlohmann::json save_worker() const override {
    const std::vector<distribute::ReplicaRandomPtr> streams = model_.random_streams();
    if (streams.empty()) return nullptr;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& stream : streams) out.push_back(stream->state());
    return {{"random_streams", out}};
  }

  // Each stream takes the union of what every saving worker saved of it, keyed by global replica: replica r
  // continues where replica r of the saving job stopped, on whichever worker it now runs, and a replica that
  // job did not have starts its stream from the beginning. On the same number of workers this is each worker's
  // own state back; on another, the documented resharding rule for random streams.
  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int, int) override {
    const std::vector<distribute::ReplicaRandomPtr> streams = model_.random_streams();
    std::vector<nlohmann::json> merged(streams.size(), nlohmann::json::object());
    size_t saved_streams = 0;
    for (const nlohmann::json& worker : saved) {
      const nlohmann::json& each = worker.at("random_streams");
      LS_CHECK(each.is_array(), DataLossError, "saved random streams are not a list");
      saved_streams = std::max(saved_streams, each.size());
      for (size_t i = 0; i < each.size() && i < streams.size(); ++i) merged[i].update(each[i]);
    }
    for (size_t i = 0; i < streams.size() && i < saved_streams; ++i) streams[i]->set_state(merged[i]);
    train::RestoreMatch match;
    for (size_t i = saved_streams; i < streams.size(); ++i) match.missing.push_back(make_message("random stream ", i));
    for (size_t i = streams.size(); i < saved_streams; ++i) match.unused.push_back(make_message("random stream ", i));
    return match;
  }

  // Variables are matched by position, as TF matches a model's object graph: a model rebuilt in a new
  // process (whose layers may be numbered differently) restores the same way.
  train::RestoreMatch restore(const train::TrackableState& state) override {
    if (!s_->built && state.values.contains("input_shape")) {
      // Restoring into a model that was never called: build it for the saved input shape first, under the
      // strategy it was created in, so its variables are mirrored like those of a model built by a call.
      std::optional<distribute::Strategy::Scope> scope;
      if (s_->strategy) scope.emplace(s_->strategy);
      std::lock_guard lock(s_->build_mutex);
      if (!s_->built) model_.build(Shape(state.values["input_shape"].get<std::vector<int64_t>>()));
    }
    std::vector<std::string> names = state.values.value("variables", std::vector<std::string>{});
    std::vector<const Tensor*> saved;
    for (const std::string& name : names) {
      const Tensor* found = nullptr;
      for (const train::NamedTensor& t : state.tensors)
        if (t.name == name) found = &t.tensor;
      LS_CHECK(found, DataLossError, "checkpoint lists model variable '", name, "' but holds no tensor for it");
      saved.push_back(found);
    }
    std::vector<Variable> vars = model_.variables();
    train::RestoreMatch match;
    // Everything is checked before anything is assigned, so a mismatch leaves the model as it was.
    for (size_t i = 0; i < vars.size() && i < saved.size(); ++i)
      LS_CHECK(saved[i]->shape() == vars[i].shape() && saved[i]->dtype() == vars[i].dtype(), ValueError,
               "checkpoint variable '", names[i], "' has shape ", saved[i]->shape().str(), " (",
               dtype_name(saved[i]->dtype()), ") but variable ", i, " of model \"", model_.name(), "\" ('",
               vars[i].name(), "') has shape ", vars[i].shape().str(), " (", dtype_name(vars[i].dtype()),
               "): the checkpoint was saved from another model");
    for (size_t i = 0; i < vars.size() && i < saved.size(); ++i) vars[i].assign(*saved[i]);
    for (size_t i = saved.size(); i < vars.size(); ++i) match.missing.push_back(vars[i].name());
    for (size_t i = vars.size(); i < saved.size(); ++i) match.unused.push_back(names[i]);
    return match;
  }

  distribute::Strategy* strategy() const override { return s_->strategy; }

 private:
  mutable Model model_;  // a handle sharing s_
  std::shared_ptr<Model::State> s_;
};

class OptimizerTrackable final : public train::Trackable {
 public:
  explicit OptimizerTrackable(std::shared_ptr<optimizers::Optimizer> o) : o_(std::move(o)) {
    LS_CHECK(o_ != nullptr, ValueError, "a checkpoint got a null optimizer; compile the model first");
  }
  train::TrackableState save() const override {
    train::TrackableState out;
    for (auto& [name, t] : o_->state()) out.tensors.push_back({name, std::move(t)});
    out.values["iterations"] = o_->iterations();
    return out;
  }
  train::RestoreMatch restore(const train::TrackableState& state) override {
    std::vector<std::pair<std::string, Tensor>> entries;
    for (const train::NamedTensor& t : state.tensors) entries.emplace_back(t.name, t.tensor);
    o_->set_state(entries);
    return {};
  }

 private:
  std::shared_ptr<optimizers::Optimizer> o_;
};

// fit()'s position. Each worker reads its own shard, so it is per-worker state (JSON only).
class FitStateTrackable final : public train::Trackable {
 public:
  explicit FitStateTrackable(std::shared_ptr<Model::State> s) : s_(std::move(s)) {}

  train::TrackableState save() const override { return {}; }
  train::RestoreMatch restore(const train::TrackableState&) override { return {}; }

  nlohmann::json save_worker() const override {
    LS_CHECK(s_->fit.has_value(), RuntimeError, "fit_state() can only be saved while fit() runs (from a callback)");
    const Model::State::FitProgress& f = *s_->fit;
    nlohmann::json v;
    // Where a restarted fit() continues: the next epoch once this one is done, else the next step of it.
    v["epoch"] = f.epoch_done ? f.epoch + 1 : f.epoch;
    v["step_in_epoch"] = f.epoch_done ? 0 : f.steps_done;
    v["total_steps"] = f.total_steps;
    v["input"] = f.input_position();
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : s_->metrics) metrics.push_back(m->state());
    v["loss_total"] = s_->loss_total;
    v["loss_count"] = s_->loss_count;
    v["metrics"] = metrics;
    v["finished"] = f.finished;
    return v;
  }
  // Saved by another number of workers: the position is global (the input maps it), and the metric
  // accumulators, which fit() sums over workers, are summed into the first worker's.
  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    if (saved.size() == static_cast<size_t>(world_size)) return take(saved[static_cast<size_t>(rank)]);
    nlohmann::json merged = saved.at(0);
    for (size_t m = 0; m < s_->metrics.size(); ++m) {
      std::vector<std::vector<double>> each;
      for (const nlohmann::json& w : saved) each.push_back(w.at("metrics").at(m).get<std::vector<double>>());
      merged["metrics"][m] = train::summed_on_first(each, rank);
    }
    for (const char* key : {"loss_total", "loss_count"}) {
      std::vector<std::vector<double>> each;
      for (const nlohmann::json& w : saved) each.push_back({w.at(key).get<double>()});
      merged[key] = train::summed_on_first(each, rank)[0];
    }
    return take(merged);
  }
  distribute::Strategy* strategy() const override { return s_->strategy; }

 private:
  train::RestoreMatch take(const nlohmann::json& v) {
    for (const char* key : {"epoch", "step_in_epoch", "total_steps", "input", "metrics", "finished"})
      LS_CHECK(v.contains(key), DataLossError, "saved fit() position lacks '", key, "'");
    // Checked here, before fit() resumes from them: a damaged position is refused, not trained from.
    for (const char* key : {"epoch", "step_in_epoch", "total_steps"})
      LS_CHECK(v[key].is_number_integer() && v[key].get<int64_t>() >= 0, DataLossError, "saved fit() position has ",
               key, " ", v[key].dump(), ", not a count (an integer >= 0)");
    LS_CHECK(v["metrics"].is_array() && v["finished"].is_array() && v["input"].is_object() &&
                 v.value("loss_total", nlohmann::json()).is_number() &&
                 v.value("loss_count", nlohmann::json()).is_number(),
             DataLossError, "saved fit() position is malformed (metrics, finished, input, loss_total or loss_count)");
    for (const nlohmann::json& e : v["finished"])
      LS_CHECK(e.is_object() && e.value("epoch", nlohmann::json()).is_number_integer() &&
                   e.value("logs", nlohmann::json()).is_object(),
               DataLossError, "saved fit() position has a malformed finished epoch: ", e.dump().substr(0, 60));
    LS_CHECK(v["metrics"].size() == s_->metrics.size(), ValueError, "saved fit() position has ", v["metrics"].size(),
             " metrics but the model is compiled with ", s_->metrics.size(),
             "; compile it with the same metrics as the run that saved it");
    s_->resume = v;
    return {};
  }

  std::shared_ptr<Model::State> s_;
};

// A metric's accumulators: each worker's own (result() sums them over workers).
class MetricTrackable final : public train::Trackable {
 public:
  explicit MetricTrackable(std::shared_ptr<metrics::Metric> m) : m_(std::move(m)) {
    LS_CHECK(m_ != nullptr, ValueError, "a checkpoint got a null metric");
  }
  train::TrackableState save() const override { return {}; }
  train::RestoreMatch restore(const train::TrackableState&) override { return {}; }
  nlohmann::json save_worker() const override { return {{"state", m_->state()}}; }
  // Saved by another number of workers: the accumulators are summed into the first worker's.
  train::RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    std::vector<std::vector<double>> each;
    for (const nlohmann::json& w : saved) each.push_back(w.at("state").get<std::vector<double>>());
    std::vector<double> mine = saved.size() == static_cast<size_t>(world_size) ? each.at(static_cast<size_t>(rank))
                                                                               : train::summed_on_first(each, rank);
    LS_CHECK(mine.size() == m_->state().size(), ValueError, "the saved state of metric '", m_->name(), "' has ",
             mine.size(), " accumulators but a ", m_->class_name(), " has ", m_->state().size(),
             ": the checkpoint was saved from another metric");
    m_->set_state(mine);
    return {};
  }

 private:
  std::shared_ptr<metrics::Metric> m_;
};

}  // namespace

std::vector<distribute::ReplicaRandomPtr> Model::random_streams() const {
  std::vector<distribute::ReplicaRandomPtr> out;
  for (const LayerPtr& layer : s_->layers)
    for (distribute::ReplicaRandomPtr& stream : layer->random_streams())
      if (std::find(out.begin(), out.end(), stream) == out.end()) out.push_back(std::move(stream));
  return out;
}

train::TrackablePtr make_trackable(const Model& model) { return std::make_shared<ModelTrackable>(model, model.s_); }

train::TrackablePtr Model::fit_state() const { return std::make_shared<FitStateTrackable>(s_); }

namespace metrics {
train::TrackablePtr make_trackable(const std::shared_ptr<Metric>& metric) {
  return std::make_shared<MetricTrackable>(metric);
}
}  // namespace metrics

namespace optimizers {
train::TrackablePtr make_trackable(const std::shared_ptr<Optimizer>& optimizer) {
  return std::make_shared<OptimizerTrackable>(optimizer);
}
}  // namespace optimizers

}  // namespace lockstep::keras
