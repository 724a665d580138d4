// Trackables of this layer's types: a Variable (one tensor), a dataset iterator and a distributed dataset
// iterator (their positions, per worker), and any input position given by its two functions.
#include "lockstep/train/trackable.h"

#include <algorithm>

namespace lockstep::train {

RestoreMatch Trackable::restore_worker(const std::vector<nlohmann::json>&, int, int) { return {}; }

void refuse_resharding(const std::string& what, size_t saved_workers, int world_size) {
  throw ValueError(make_message("this checkpoint's ", what, " was saved by ", saved_workers,
                                " workers and cannot be mapped onto ", world_size,
                                " workers; restore it on the same number of workers"));
}

std::vector<double> summed_on_first(const std::vector<std::vector<double>>& saved, int rank) {
  std::vector<double> sum;
  for (const std::vector<double>& worker : saved) {
    if (worker.size() > sum.size()) sum.resize(worker.size(), 0.0);
    for (size_t i = 0; i < worker.size(); ++i) sum[i] += worker[i];
  }
  if (rank != 0) std::fill(sum.begin(), sum.end(), 0.0);
  return sum;
}

TrackableRef::TrackableRef(TrackablePtr ptr) : ptr_(std::move(ptr)) {
  LS_CHECK(ptr_ != nullptr, ValueError, "a checkpoint got a null trackable object");
}

namespace {

class VariableTrackable final : public Trackable {
 public:
  explicit VariableTrackable(Variable v) : v_(std::move(v)) {
    LS_CHECK(v_.valid(), ValueError, "a checkpoint got an empty Variable handle");
  }
  TrackableState save() const override {
    TrackableState s;
    s.tensors.push_back({"", v_.value().clone()});
    // Scalars are also readable in the metadata ("epoch", "step_in_epoch" of TF's tutorials).
    if (v_.shape().rank() == 0) s.values["scalar"] = v_.value().item<double>();
    return s;
  }
  RestoreMatch restore(const TrackableState& state) override {
    for (const NamedTensor& t : state.tensors) {
      if (!t.name.empty()) continue;
      LS_CHECK(t.tensor.shape() == v_.shape() && t.tensor.dtype() == v_.dtype(), ValueError, "checkpoint value for ",
               "variable '", v_.name(), "' has shape ", t.tensor.shape().str(), " and dtype ",
               dtype_name(t.tensor.dtype()), " but the variable has shape ", v_.shape().str(), " and dtype ",
               dtype_name(v_.dtype()));
      v_.assign(t.tensor);
      return {};
    }
    return {{v_.name()}, {}};
  }

 private:
  Variable v_;
};

// An input position, per worker, read and set through two functions.
class PositionTrackable final : public Trackable {
 public:
  PositionTrackable(std::function<nlohmann::json()> save, std::function<void(const nlohmann::json&)> restore,
                    bool global)
      : save_(std::move(save)), restore_(std::move(restore)), global_(global) {}
  TrackableState save() const override { return {}; }
  RestoreMatch restore(const TrackableState&) override { return {}; }
  nlohmann::json save_worker() const override { return {{"position", save_()}}; }
  RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    size_t from = static_cast<size_t>(rank);
    if (saved.size() != static_cast<size_t>(world_size)) {
      if (!global_) refuse_resharding("input position", saved.size(), world_size);
      from = 0;  // every worker's copy holds the same place in the global stream
    }
    if (from >= saved.size() || !saved[from].contains("position")) return {{"position"}, {}};
    restore_(saved[from].at("position"));
    return {};
  }

 private:
  std::function<nlohmann::json()> save_;
  std::function<void(const nlohmann::json&)> restore_;
  bool global_;
};

}  // namespace

TrackablePtr make_trackable(const Variable& variable) { return std::make_shared<VariableTrackable>(variable); }
TrackablePtr make_position_trackable(std::function<nlohmann::json()> save,
                                     std::function<void(const nlohmann::json&)> restore, bool global) {
  return std::make_shared<PositionTrackable>(std::move(save), std::move(restore), global);
}
TrackablePtr make_trackable(data::Iterator& iterator) {
  return make_position_trackable([&iterator] { return iterator.save_state(); },
                                 [&iterator](const nlohmann::json& s) { iterator.restore_state(s); }, false);
}
TrackablePtr make_trackable(distribute::DistributedDataset::Iterator& iterator) {
  return make_position_trackable([&iterator] { return iterator.save_state(); },
                                 [&iterator](const nlohmann::json& s) { iterator.restore_state(s); }, true);
}

}  // namespace lockstep::train
