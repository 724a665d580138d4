// BackupAndRestore: fit() backed up through a CheckpointManager (model, optimizer, global random stream and
// fit's position) and resumed from it exactly; saves before exiting on a preemption signal.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>

#include "lockstep/core/logging.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/model.h"
#include "lockstep/train/checkpoint.h"
#include "lockstep/train/preemption.h"

namespace lockstep::keras::callbacks {

SaveFreq::SaveFreq(const char* when) {
  LS_CHECK(when && std::string(when) == "epoch", ValueError, "save_freq must be \"epoch\" or a number of steps, got \"",
           when ? when : "", "\"");
}

SaveFreq::SaveFreq(int64_t every_n_steps) : steps(every_n_steps) {
  LS_CHECK(every_n_steps > 0, ValueError, "save_freq in steps must be > 0, got ", every_n_steps,
           "; use \"epoch\" to save at the end of every epoch");
}

namespace {

class BackupAndRestoreCallback : public Callback {
 public:
  explicit BackupAndRestoreCallback(BackupAndRestoreOptions o) : opt_(std::move(o)) {
    LS_CHECK(!opt_.backup_dir.empty(), ValueError, "BackupAndRestore needs a backup_dir");
  }

  void on_train_begin(const Logs&) override {
    LS_CHECK(model_ && model_->optimizer(), RuntimeError, "BackupAndRestore needs a compiled model");
    checkpoint_ = std::make_unique<train::Checkpoint>(
        std::vector<std::pair<std::string, train::TrackableRef>>{{"model", *model_},
                                                                 {"optimizer", model_->optimizer()},
                                                                 {"fit", model_->fit_state()},
                                                                 {"random", utils::global_random_state()}},
        train::CheckpointOptions{.async = opt_.async_checkpoint});
    // Two backups: when the newest turns out damaged, the one before it is still there.
    manager_ = std::make_unique<train::CheckpointManager>(*checkpoint_, opt_.backup_dir,
                                                          train::CheckpointManagerOptions{.max_to_keep = 2});
    if (opt_.save_before_preemption) watch_.emplace();
    const auto start = std::chrono::steady_clock::now();
    const std::optional<std::string> restored = manager_->restore_or_initialize();
    if (!restored) return;
    restored_at_ = start;
    if (checkpoint_->is_chief()) {
      const auto& meta = checkpoint_->metadata();
      auto get = [&](const char* key) -> long long {  // for the log line only: a damaged entry shows as -1
        long long v = -1;
        if (auto it = meta.find(key); it != meta.end())
          std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
        return v;
      };
      std::fprintf(stderr, "BackupAndRestore: restored epoch %lld step %lld from %s\n",
                   static_cast<long long>(get("epoch") + 1), static_cast<long long>(get("step_in_epoch")),
                   restored->c_str());
    }
  }

  void on_train_batch_end(int64_t, const Logs&) override {
    if (restored_at_) {  // how long a restart took to train again, for the logs (and bench/fault_tolerance.py)
      if (checkpoint_->is_chief())
        log(LogLevel::info, "BackupAndRestore: first step after the restore done in ",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - *restored_at_).count(), " s");
      restored_at_.reset();
    }
    if (opt_.save_freq.steps > 0 && model_->optimizer()->iterations() % opt_.save_freq.steps == 0) manager_->save();
    if (opt_.save_before_preemption && train::preemption_agreed(checkpoint_->strategy())) preempt();
  }

  void on_epoch_end(int64_t, const Logs&) override {
    if (opt_.save_freq.steps == 0) manager_->save();
  }

  void on_train_end(const Logs&) override {
    manager_->sync();
    if (opt_.delete_checkpoint) manager_->delete_checkpoints();
    manager_.reset();
    checkpoint_.reset();
    watch_.reset();
  }

 private:
  // Every worker got here at the same step: save, wait for the file to be durable, leave.
  [[noreturn]] void preempt() {
    manager_->save(std::nullopt, false);
    manager_->sync();
    if (checkpoint_->is_chief())
      std::fprintf(stderr, "BackupAndRestore: preempted; saved to %s, exiting with code %d to be restarted\n",
                   manager_->latest_checkpoint().value_or("?").c_str(), train::kPreemptedExitCode);
    train::exit_after_preemption(checkpoint_->strategy());
  }

  BackupAndRestoreOptions opt_;
  // Declared before the checkpoint, so destroyed after it: when training ends on an error (a peer died), the
  // launcher's SIGTERM to the survivors must not kill the chief while its destructor finishes the backup in flight.
  std::optional<train::PreemptionWatch> watch_;
  std::unique_ptr<train::Checkpoint> checkpoint_;
  std::unique_ptr<train::CheckpointManager> manager_;
  std::optional<std::chrono::steady_clock::time_point> restored_at_;
};

}  // namespace

std::shared_ptr<Callback> BackupAndRestore(BackupAndRestoreOptions options) {
  return std::make_shared<BackupAndRestoreCallback>(std::move(options));
}

}  // namespace lockstep::keras::callbacks
