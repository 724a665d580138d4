// When ModelCheckpoint and BackupAndRestore save (defined with BackupAndRestore, src/keras/saving/backup.cc).
#pragma once
#include <cstdint>

namespace lockstep::keras::callbacks {

// When ModelCheckpoint or BackupAndRestore saves: "epoch" (at the end of every epoch) or every N training steps.
struct SaveFreq {
  SaveFreq(const char* when);
  SaveFreq(int64_t every_n_steps);
  int64_t steps = 0;  // 0: every epoch
};

}  // namespace lockstep::keras::callbacks
