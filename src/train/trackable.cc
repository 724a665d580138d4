// Trackables of this layer's types: a Variable (one tensor), a dataset iterator and a distributed dataset
// iterator (their positions, per worker).
#include "lockstep/train/trackable.h"

namespace lockstep::train {

void Trackable::restore_resharded(const std::vector<nlohmann::json>& saved, int world_size, int) {
  throw ValueError(make_message("this checkpoint's input position was saved by ", saved.size(),
                                " workers and cannot be mapped onto ", world_size,
                                " workers; restore it on the same number of workers"));
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

// An input iterator's position (data::Iterator or DistributedDataset::Iterator): JSON, per worker.
template <typename It> class PositionTrackable final : public Trackable {
 public:
  explicit PositionTrackable(It& it) : it_(it) {}
  TrackableState save() const override { return {{}, {{"position", it_.save_state()}}}; }
  RestoreMatch restore(const TrackableState& state) override {
    if (!state.values.contains("position")) return {{"position"}, {}};
    it_.restore_state(state.values.at("position"));
    return {};
  }
  bool per_worker() const override { return true; }
  // A distributed iterator's state holds its place in the global stream, which any worker's copy maps onto a
  // job of another size; a plain iterator's position belongs to its worker's shard and cannot be mapped.
  void restore_resharded(const std::vector<nlohmann::json>& saved, int world_size, int rank) override {
    if constexpr (!std::is_same_v<It, distribute::DistributedDataset::Iterator>) {
      Trackable::restore_resharded(saved, world_size, rank);
    } else {
      LS_CHECK(!saved.empty() && saved[0].contains("position"), DataLossError, "saved input position is missing");
      it_.restore_state(saved[0].at("position"));
    }
  }

 private:
  It& it_;
};

}  // namespace

TrackablePtr make_trackable(const Variable& variable) { return std::make_shared<VariableTrackable>(variable); }
TrackablePtr make_trackable(data::Iterator& iterator) {
  return std::make_shared<PositionTrackable<data::Iterator>>(iterator);
}
TrackablePtr make_trackable(distribute::DistributedDataset::Iterator& iterator) {
  return std::make_shared<PositionTrackable<distribute::DistributedDataset::Iterator>>(iterator);
}

}  // namespace lockstep::train
