// The base of the Keras optimizers (keras.optimizers.Optimizer): it owns the learning rate, the iteration count and
// the slot variables with their saving; each optimizer adds only its update rule, a fused in-place loop over raw
// float32 or float64 pointers.
#pragma once
#include <array>
#include <concepts>
#include <map>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lockstep/autograd/variable.h"
#include "lockstep/keras/optimizers/schedules.h"
#include "lockstep/keras/registry.h"
#include "lockstep/tensor/tensor.h"
#include "lockstep/train/trackable.h"

namespace lockstep::distribute {
class Strategy;
}

namespace lockstep::keras::optimizers {

// An optimizer's learning_rate argument: a constant or a schedule, implicit from either, so that
// SGD({.learning_rate = 0.1}) and SGD({.learning_rate = ExponentialDecay({...})}) both read like Keras.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}
  template <std::derived_from<LearningRateSchedule> S>
  LearningRate(std::shared_ptr<S> schedule);
  template <std::derived_from<LearningRateSchedule> S>
  LearningRate(S schedule) : LearningRate(std::make_shared<S>(std::move(schedule))) {}

  double at(int64_t step) const { return schedule_ ? (*schedule_)(step) : value_; }
  const std::shared_ptr<LearningRateSchedule>& schedule() const { return schedule_; }
  // A number, or {"class_name": ..., "config": ...} for a schedule, as Keras serialises it.
  nlohmann::json to_json() const;
  // What to_json() wrote (or Keras did): ValueError for a schedule lockstep lacks.
  static LearningRate from_json(const nlohmann::json& json);

 private:
  double value_ = 0;
  std::shared_ptr<LearningRateSchedule> schedule_;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update to each (gradient, variable) pair, in place, and counts one iteration. Undefined
  // gradients are skipped with a warning (logged once per optimizer). A gradient must have its
  // variable's shape and dtype (float32 or float64): InvalidArgumentError naming the variable otherwise.
  // Inside strategy.run() the gradients are first all-reduced across replicas and the update runs once.
  void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  // Creates the slots of `variables` now instead of on their first update (Keras' optimizer.build).
  void build(const std::vector<Variable>& variables);

  int64_t iterations() const { return iterations_; }  // updates applied so far
  double learning_rate() const { return learning_rate_.at(iterations_); }
  // Replaces a schedule too (the LearningRateScheduler callback sets a constant every epoch).
  void set_learning_rate(double lr) { learning_rate_ = lr; }
  // A schedule from now on (one written in Python, which no config names).
  void set_learning_rate(LearningRate lr) { learning_rate_ = std::move(lr); }
  const std::string& name() const { return name_; }

  // Copies of all state for checkpoints: ("iterations", int64 scalar) first, then each variable's slots
  // named "<optimizer name>/<variable name>/<slot>", variables in the order their slots were created.
  std::vector<std::pair<std::string, Tensor>> state() const;
  // Restores state(). Slot sets are matched by position (variables in the order they were first updated),
  // not by name, so a model rebuilt in another process restores. Slots of variables not yet seen are kept
  // and applied when their slots are created, so a fresh optimizer can be restored before its first step. A
  // shape mismatch or a name that does not belong to this optimizer raises ValueError naming the entry.
  void set_state(const std::vector<std::pair<std::string, Tensor>>& state);

  // {"name", "learning_rate"}, Keras 3's base options (all off), plus the optimizer's own options.
  virtual nlohmann::json get_config() const;
  // The Keras class name ("Adam"), saved with get_config() in a model's compile config.
  virtual std::string class_name() const = 0;
  // The slot names grouped as Keras 3's build() creates them, one group per add_optimizer_variables call (Adam
  // with amsgrad: {{momentum, velocity}, {velocity_hat}}), which orders them in a .keras file; by default one group.
  virtual std::vector<std::vector<std::string>> keras_slot_groups() const;

 protected:
  static constexpr size_t kMaxSlots = 3;
  // `slot_names` are the per-variable state tensors update_step receives, in this order (at most kMaxSlots); each
  // starts every element at `slot_initial_value` (Adagrad's initial_accumulator_value; 0 for the others).
  Optimizer(std::string name, LearningRate learning_rate, std::vector<std::string> slot_names,
            double slot_initial_value = 0);

  struct Step {
    double learning_rate;  // at the current iterations()
    int64_t t;             // iterations() + 1, for bias corrections
    bool on_gpu = false;   // the pointers are the current GPU's memory: run the rule's CUDA kernel
  };
  // Updates n elements of one variable in place. slots[i] points at the slot_names[i] state of the same
  // elements (starting at slot_initial_value). May be called on sub-ranges of a variable in parallel.
  virtual void update_step(float* w, const float* g, float* const* slots, int64_t n, const Step& step) const = 0;
  virtual void update_step(double* w, const double* g, double* const* slots, int64_t n, const Step& step) const = 0;

 private:
  // The update itself, on gradients that are already the replicas' sum: begin_update checks them, creates the
  // missing slots and counts the iteration (on one thread); update_part then updates part `part` of `parts` of
  // every variable's elements, the parts on as many threads at once.
  void apply_reduced(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  void begin_update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  void update_part(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables, int part, int parts);
  // update_part with each variable's gradient the sum of its addends (every replica's, in replica order), taken a
  // block at a time in cache: the sum is never written to memory.
  void update_part(const std::vector<std::vector<Tensor>>& addends, const std::vector<Variable>& variables, int part,
                   int parts);

  struct Slots {
    std::string prefix;  // "<optimizer name>/<variable name>/"
    std::vector<Tensor> tensors;
  };
  Slots& slots_for(const Variable& v);
  // Every worker's copy of a variable and of each of its slots (rank order), which the update workers on one host
  // share writes its part into (Strategy::shares_update); `self` is this worker's, skipped. Views of the strategy's
  // table: nothing is allocated per step.
  struct Copies {
    std::span<void* const> value;
    std::array<std::span<void* const>, kMaxSlots> slots{};
    size_t self = 0;
  };
  // Moves what the shared update writes into mirrored memory where it is not yet (the variables at the first shared
  // update, slots once made), unless mirroring could not be done here before.
  void mirror_state(distribute::Strategy& strategy, const std::vector<Variable>& variables);
  // v's copies, or nullopt where v or one of its slots is not mirrored (every worker then updates all of its own).
  std::optional<Copies> copies_of(const distribute::Strategy& strategy, const Variable& v);
  // Updates part `part` of `parts` of v from the sum of `addends`, and writes it into `copies` too (if given).
  template <typename T>
  void apply_one(std::span<const Tensor> addends, const Variable& v, const Step& step, int part, int parts,
                 const Copies* copies);

  std::string name_;
  LearningRate learning_rate_;
  std::vector<std::string> slot_names_;
  double slot_initial_value_;
  int64_t iterations_ = 0;
  Step step_{};  // of the update begin_update started
  std::vector<Slots> slots_;                         // in creation order, which state() keeps
  std::unordered_map<int64_t, size_t> slot_index_;   // Variable::unique_id() -> index in slots_
  std::map<size_t, std::vector<Tensor>> pending_;    // restored slot sets of variables not yet seen, by position
  bool warned_missing_gradients_ = false;
  bool mirroring_failed_ = false;  // Strategy::mirror could not map memory: no more attempts
};

// An optimizer in a checkpoint (tf.train.Checkpoint(optimizer=...)): iterations and slots, as state() gives them.
train::TrackablePtr make_trackable(const std::shared_ptr<Optimizer>& optimizer);

}  // namespace lockstep::keras::optimizers

template <std::derived_from<lockstep::keras::optimizers::LearningRateSchedule> S>
lockstep::keras::optimizers::LearningRate::LearningRate(std::shared_ptr<S> schedule) : schedule_(std::move(schedule)) {
  LS_CHECK(schedule_ != nullptr, ValueError,
           "learning_rate: got a null LearningRateSchedule; pass a schedule or a number");
}
