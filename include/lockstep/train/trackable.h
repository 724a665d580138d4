// What a checkpoint saves: Trackable objects (a model, an optimizer, a variable, a dataset iterator, a random
// stream) hand over their state as named tensors plus small JSON values and take it back: the state all workers
// share, which the chief writes, and each worker's own, which the checkpoint gathers from every worker.
// TrackableRef lets a Checkpoint take any of them by value, as tf.train.Checkpoint(model=..., optimizer=...) does:
// layers above this one (keras) make their types trackable by defining make_trackable(const T&) in their own
// namespace.
#pragma once
#include <concepts>
#include <functional>
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
  // A snapshot of the state every worker shares, taken between steps on the chief: tensors are copies, so
  // training may go on while they are written.
  virtual TrackableState save() const = 0;
  // Takes a saved shared state back. Throws ValueError naming the entry for a shape or dtype mismatch.
  virtual RestoreMatch restore(const TrackableState& state) = 0;

  // State that differs between workers, as JSON: an input position (each worker reads its own shard), a random
  // layer's per-replica streams, metrics' partial sums. Taken on every worker at every save; null when the object
  // has none, and then null on every worker alike (whether a save gathers is decided the same everywhere).
  virtual nlohmann::json save_worker() const { return nullptr; }
  // Takes it back on worker `rank` of a job of `world_size` workers, from what each worker of the saving job
  // saved (saved[r] is rank r's). The saving job may have had another size: the object's rule then says how its
  // state reshards (docs/fault-tolerance.md lists them), or refuses with refuse_resharding().
  virtual RestoreMatch restore_worker(const std::vector<nlohmann::json>& saved, int world_size, int rank);

  // The strategy whose variables the object holds, if any: a checkpoint of it saves and restores
  // collectively over that strategy's workers.
  virtual distribute::Strategy* strategy() const { return nullptr; }
};

// The ValueError of a per-worker state that cannot be mapped onto another number of workers.
[[noreturn]] void refuse_resharding(const std::string& what, size_t saved_workers, int world_size);
// The resharding rule of accumulators that are summed over workers when read (metrics, loss totals): every saved
// worker's, summed, on the first worker (`rank` 0); zeros on the others. Shorter entries count as zeros.
std::vector<double> summed_on_first(const std::vector<std::vector<double>>& saved, int rank);

using TrackablePtr = std::shared_ptr<Trackable>;

// Trackables for this layer's types. Iterators are held by reference: keep them alive as long as the checkpoint.
TrackablePtr make_trackable(const Variable& variable);
TrackablePtr make_trackable(data::Iterator& iterator);
TrackablePtr make_trackable(distribute::DistributedDataset::Iterator& iterator);
// An input position read by `save` and set by `restore` (a Python iterator's), per worker. `global`: the position
// is a place in the global stream (a distributed iterator's), which any worker's copy maps onto a job of another
// size; otherwise it is its worker's own shard and a job of another size refuses it.
TrackablePtr make_position_trackable(std::function<nlohmann::json()> save,
                                     std::function<void(const nlohmann::json&)> restore, bool global);

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
