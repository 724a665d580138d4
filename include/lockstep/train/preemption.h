// Preemption: SIGTERM or SIGINT to any worker makes every worker save at the same step boundary and exit
// with kPreemptedExitCode, which launchers restart on without counting a failure. PreemptionCheckpointHandler
// is TF's tf.distribute.experimental.PreemptionCheckpointHandler for custom training loops; BackupAndRestore
// does the same inside fit().
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "lockstep/train/checkpoint.h"

namespace lockstep::train {

// The exit code of a worker that saved because of a preemption signal (sysexits.h' EX_TEMPFAIL: try again).
inline constexpr int kPreemptedExitCode = 75;

// While at least one watch is alive, SIGTERM and SIGINT are recorded instead of ending the process; the
// previous handlers come back when the last one goes.
class PreemptionWatch {
 public:
  PreemptionWatch();
  ~PreemptionWatch();
  PreemptionWatch(const PreemptionWatch&) = delete;
  PreemptionWatch& operator=(const PreemptionWatch&) = delete;
};

// Whether this process received SIGTERM or SIGINT while a watch was alive.
bool preemption_signal_received();
// True on every worker as soon as any worker received one: a collective call (one small all-reduce) that
// every worker makes at the same step.
bool preemption_agreed(distribute::Strategy* strategy);
// After a save: waits until every worker is there (so nobody leaves before the chief's file is durable),
// flushes stdio and ends the process with `code` at once, without unwinding (the peers do the same now).
[[noreturn]] void exit_after_preemption(distribute::Strategy* strategy, int code = kPreemptedExitCode);

struct TerminationConfig {
  std::function<void()> exit_fn = nullptr;  // default: exit_after_preemption
  std::function<void()> save_fn = nullptr;  // default: save the checkpoint (or the manager's)
};

class PreemptionCheckpointHandler {
 public:
  // Restores the newest checkpoint of `manager` (with total_run_calls) if there is one.
  PreemptionCheckpointHandler(CheckpointManager& manager, TerminationConfig config = {});
  // With a checkpoint and its directory: a manager of its own there (keeping one checkpoint, as TF's does).
  PreemptionCheckpointHandler(Checkpoint& checkpoint, const std::string& checkpoint_dir, TerminationConfig config = {});
  // TF's signatures, which begin with the cluster resolver; lockstep's checkpoint already knows the cluster
  // through its strategy, so the resolver is only checked to be that strategy's.
  PreemptionCheckpointHandler(const distribute::ClusterResolver& cluster_resolver, CheckpointManager& manager,
                              TerminationConfig config = {});
  PreemptionCheckpointHandler(const distribute::ClusterResolver& cluster_resolver, Checkpoint& checkpoint,
                              const std::string& checkpoint_dir, TerminationConfig config = {});
  ~PreemptionCheckpointHandler();

  // Runs fn(args...) as one training step and counts it; then, if any worker was signalled, every worker
  // saves here and exits. The count is saved with the checkpoint, so a restarted loop starts at
  // total_run_calls().
  template <typename F, typename... Args> decltype(auto) run(F&& fn, Args&&... args) {
    if constexpr (std::is_void_v<std::invoke_result_t<F, Args...>>) {
      std::forward<F>(fn)(std::forward<Args>(args)...);
      after_step();
    } else {
      auto result = std::forward<F>(fn)(std::forward<Args>(args)...);
      after_step();
      return result;
    }
  }
  int64_t total_run_calls() const;

 private:
  static CheckpointManager& checked(const distribute::ClusterResolver& resolver, CheckpointManager& manager);
  static Checkpoint& checked(const distribute::ClusterResolver& resolver, Checkpoint& checkpoint);
  void start();  // registers the step count with the checkpoint and restores
  void after_step();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::train
