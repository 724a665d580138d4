// Keras objects in checkpoints: a model (variables in order, Dropout streams, input shape), an
// optimizer (iterations and slots) and fit()'s position (for BackupAndRestore).
#include <charconv>
#include <optional>
#include <set>

#include "lockstep/core/logging.h"
#include "model-impl.h"

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
    nlohmann::json streams = nlohmann::json::object();
    for (size_t i = 0; i < s_->layers.size(); ++i)
      if (auto* d = dynamic_cast<layers::Dropout*>(s_->layers[i].get())) streams[std::to_string(i)] = d->rng_state();
    out.values["dropout"] = streams;
    return out;
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
    if (state.values.contains("dropout"))
      for (const auto& [index, stream] : state.values["dropout"].items()) {
        size_t i = SIZE_MAX;  // a key that is not a layer index matches no layer
        std::from_chars(index.data(), index.data() + index.size(), i);
        auto* d = i < s_->layers.size() ? dynamic_cast<layers::Dropout*>(s_->layers[i].get()) : nullptr;
        if (d)
          d->set_rng_state(stream);
        else
          match.unused.push_back("dropout/" + index);
      }
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

  train::TrackableState save() const override {
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
    return {{}, std::move(v)};
  }
  train::RestoreMatch restore(const train::TrackableState& state) override {
    const nlohmann::json& v = state.values;
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
    LS_CHECK(state.values["metrics"].size() == s_->metrics.size(), ValueError, "saved fit() position has ",
             state.values["metrics"].size(), " metrics but the model is compiled with ", s_->metrics.size(),
             "; compile it with the same metrics as the run that saved it");
    s_->resume = state.values;
    return {};
  }
  // Saved by another number of workers: the position is global (the input maps it), and the metric
  // accumulators, which fit() sums over workers, are summed into the first worker's.
  void restore_resharded(const std::vector<nlohmann::json>& saved, int, int rank) override {
    nlohmann::json merged = saved.at(0);
    for (size_t m = 0; m < s_->metrics.size(); ++m) {
      std::vector<double> sum = merged["metrics"][m].get<std::vector<double>>();
      for (size_t w = 1; w < saved.size(); ++w) {
        std::vector<double> more = saved[w]["metrics"][m].get<std::vector<double>>();
        for (size_t i = 0; i < sum.size() && i < more.size(); ++i) sum[i] += more[i];
      }
      if (rank != 0) std::fill(sum.begin(), sum.end(), 0.0);
      merged["metrics"][m] = sum;
    }
    double loss_total = 0, loss_count = 0;
    for (const nlohmann::json& w : saved) {
      loss_total += w["loss_total"].get<double>();
      loss_count += w["loss_count"].get<double>();
    }
    merged["loss_total"] = rank == 0 ? loss_total : 0.0;
    merged["loss_count"] = rank == 0 ? loss_count : 0.0;
    restore({{}, merged});
  }
  bool per_worker() const override { return true; }
  distribute::Strategy* strategy() const override { return s_->strategy; }

 private:
  std::shared_ptr<Model::State> s_;
};

}  // namespace

train::TrackablePtr make_trackable(const Model& model) { return std::make_shared<ModelTrackable>(model, model.s_); }

train::TrackablePtr Model::fit_state() const { return std::make_shared<FitStateTrackable>(s_); }

namespace optimizers {
train::TrackablePtr make_trackable(const std::shared_ptr<Optimizer>& optimizer) {
  return std::make_shared<OptimizerTrackable>(optimizer);
}
}  // namespace optimizers

}  // namespace lockstep::keras
