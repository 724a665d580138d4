// keras.callbacks.ModelCheckpoint: the model or its weights saved every epoch or every N steps.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/callbacks/callback.h"
#include "lockstep/keras/callbacks/save_freq.h"

namespace lockstep::keras::callbacks {

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  // true: the weights only, one safetensors file (save_weights); false: the whole model, a directory
  // (save, which load_model reads back).
  bool save_weights_only = false;
  std::string mode = "auto";
  // Every N steps counts steps across epochs; save_best_only then compares the batch's logs.
  SaveFreq save_freq = "epoch";
};
// Saves the model (or its weights) to `filepath` after every epoch or every N steps, where "{epoch}" or
// "{epoch:02d}", "{batch}" (steps only) and "{<log key>:.4f}" are replaced by their values (epochs and
// batches count from 1, as Keras prints them; a step-based save takes the current epoch); its directory is created.
// Under a multi-worker strategy only the chief writes, and every worker goes on once the file is durable.
std::shared_ptr<Callback> ModelCheckpoint(const std::string& filepath, ModelCheckpointOptions options = {});

}  // namespace lockstep::keras::callbacks
