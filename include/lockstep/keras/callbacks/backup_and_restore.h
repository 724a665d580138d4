// keras.callbacks.BackupAndRestore: fit() backed up and resumed exactly (defined on the saving side,
// src/keras/saving/backup.cc).
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/callbacks/callback.h"
#include "lockstep/keras/callbacks/save_freq.h"

namespace lockstep::keras::callbacks {

struct BackupAndRestoreOptions {
  std::string backup_dir;
  SaveFreq save_freq = "epoch";
  bool delete_checkpoint = true;  // remove the backup when fit() ends normally
  // On SIGTERM or SIGINT (to any worker), every worker saves at the same next step and fit() ends; the
  // program then exits with kPreemptedExitCode (see train/preemption.h).
  bool save_before_preemption = false;
  // Two-phase saves: the step only copies state to host buffers and a background thread writes the file.
  bool async_checkpoint = true;
};
// tf.keras.callbacks.BackupAndRestore: backs fit() up to backup_dir (a CheckpointManager keeping the two newest
// backups) and, when fit() starts with a backup there, restores the model (building it if it was never called),
// the optimizer, the random streams and fit's exact position — epoch, step in epoch, the input's position,
// metric accumulators and History — so the interrupted run continues bitwise as if it had never stopped. Under
// a strategy every worker must use it; only the chief writes.
std::shared_ptr<Callback> BackupAndRestore(BackupAndRestoreOptions options);

}  // namespace lockstep::keras::callbacks
