// keras.callbacks.ReduceLROnPlateau: a smaller learning rate once a monitored log has stopped improving.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// Multiplies the optimizer's learning rate by `factor` (down to min_lr) once `monitor` has not improved by
// min_delta for `patience` epochs, then waits `cooldown` epochs before counting again (Keras' ReduceLROnPlateau).
// Every worker sees the same logs, so every worker decides alike.
struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // < 1
  int64_t patience = 10;
  int verbose = 0;
  std::string mode = "auto";  // "min", "max", or "auto" (max for accuracy-like names)
  double min_delta = 1e-4;
  int64_t cooldown = 0;
  double min_lr = 0.0;
};
std::shared_ptr<Callback> ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

}  // namespace lockstep::keras::callbacks
