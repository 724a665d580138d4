// What a checkpoint saves: Trackable objects (a model, an optimizer, a variable, a dataset iterator, a random
// stream) hand over their state as named tensors plus small JSON values and take it back. TrackableRef lets
// a Checkpoint take any of them by value, as tf.train.Checkpoint(model=..., optimizer=...) does: layers above
// this one (keras) make their types trackable by defining make_trackable(const T&) in their own namespace.
#pragma once
#include <concepts>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/autograd/variable.h"
#include "lockstep/data/dataset.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/train/safetensors.h"

namespace lockstep::train {

// One object's state. Tensor names are relative to the object ("dense/kernel"; "" for an object that is a
// single tensor, such as a Variable).
struct TrackableState {
  std::vector<NamedTensor> tensors;
  nlohmann::json values = nlohmann::json::object();
};

// What a restore could not match, for the checkpoint's load status.
struct RestoreMatch {
  std::vector<std::string> missing;  // the object's state that the checkpoint lacked
  std::vector<std::string> unused;   // checkpoint entries that the object had no use for
};

class Trackable {
 public:
  virtual ~Trackable() = default;
  // A snapshot, taken between steps: tensors are copies, so training may go on while they are written.
  virtual TrackableState save() const = 0;
  // Takes a saved state back. Throws ValueError naming the entry for a shape or dtype mismatch.
  virtual RestoreMatch restore(const TrackableState& state) = 0;
  // True for state that differs between workers (a dataset iterator reads its own shard): the checkpoint
  // gathers every worker's values (JSON only) and gives each worker its own back.
  virtual bool per_worker() const { return false; }
  // For per_worker objects: restores values saved by a job of `saved.size()` workers on a job of another
  // size. The default refuses, naming the sizes.
  virtual void restore_resharded(const std::vector<nlohmann::json>& saved, int world_size, int rank);
  // The strategy whose variables the object holds, if any: a checkpoint of it saves and restores
  // collectively over that strategy's workers.
  virtual distribute::Strategy* strategy() const { return nullptr; }
};
using TrackablePtr = std::shared_ptr<Trackable>;

// Trackables for this layer's types. Iterators are held by reference: keep them alive as long as the checkpoint.
TrackablePtr make_trackable(const Variable& variable);
TrackablePtr make_trackable(data::Iterator& iterator);
TrackablePtr make_trackable(distribute::DistributedDataset::Iterator& iterator);

// Anything make_trackable() accepts (found by argument-dependent lookup), or a Trackable itself.
class TrackableRef {
 public:
  TrackableRef(TrackablePtr ptr);
  template <std::derived_from<Trackable> T>
  TrackableRef(std::shared_ptr<T> ptr) : TrackableRef(TrackablePtr(std::move(ptr))) {}
  template <typename T>
    requires(!std::convertible_to<T, TrackablePtr>) && requires(T& t) {
      { make_trackable(t) } -> std::convertible_to<TrackablePtr>;
    }
  TrackableRef(T& object) : TrackableRef(TrackablePtr(make_trackable(object))) {}
  template <typename T>
    requires(!std::convertible_to<T, TrackablePtr>) && requires(const T& t) {
      { make_trackable(t) } -> std::convertible_to<TrackablePtr>;
    }
  TrackableRef(const T& object) : TrackableRef(TrackablePtr(make_trackable(object))) {}
  const TrackablePtr& get() const { return ptr_; }

 private:
  TrackablePtr ptr_;
};

}  // namespace lockstep::train
