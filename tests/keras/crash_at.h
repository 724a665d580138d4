// A callback that stops fit() after a given number of steps, as a killed worker would: for the tests of
// BackupAndRestore (Sequential and functional models).
#pragma once
#include <stdexcept>

#include "lockstep/keras/model.h"

namespace lockstep::keras {

struct Crash : std::runtime_error {
  Crash() : std::runtime_error("simulated crash") {}
};

// Throws after `step` steps of the whole fit (counted by the optimizer).
class CrashAt : public Callback {
 public:
  explicit CrashAt(int64_t step) : step_(step) {}
  void on_train_batch_end(int64_t, const Logs&) override {
    if (model_->optimizer()->iterations() == step_) throw Crash();
  }

 private:
  int64_t step_;
};

}  // namespace lockstep::keras
