// keras.callbacks.EarlyStopping: stops training once a monitored log has stopped improving.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int64_t patience = 0;
  int verbose = 0;
  std::string mode = "auto";  // "min", "max", or "auto" (max for accuracy-like names)
  std::optional<double> baseline = std::nullopt;
  bool restore_best_weights = false;
  int64_t start_from_epoch = 0;
};
std::shared_ptr<Callback> EarlyStopping(EarlyStoppingOptions options = {});

}  // namespace lockstep::keras::callbacks
