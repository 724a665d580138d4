// keras.callbacks.CSVLogger: every epoch's logs as a row of a CSV file.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

struct CSVLoggerOptions {
  char separator = ',';
  bool append = false;
};
// Writes "epoch,<sorted log keys>" and one row per epoch to a CSV file.
std::shared_ptr<Callback> CSVLogger(const std::string& filename, CSVLoggerOptions options = {});

}  // namespace lockstep::keras::callbacks
