// keras.callbacks.TensorBoard: event files with Keras 3's tags, steps and train/validation runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// When TensorBoard writes batch-level summaries: "epoch" (never; epoch summaries only), "batch" (every batch) or
// every N batches.
struct UpdateFreq {
  UpdateFreq(const char* when);
  UpdateFreq(int64_t every_n_batches);
  int64_t batches = 0;  // 0: "epoch"
};

struct TensorBoardOptions {
  std::string log_dir = "logs";
  // Every N epochs (from the first), a histogram of every weight, "<model>/<layer>/<weight>/histogram"; 0: none.
  int64_t histogram_freq = 0;
  // The model's config as the tag "keras" at step 0, which TensorBoard's Graphs tab draws as Keras' conceptual
  // graph. TF's op-level graph has no counterpart here. Off by default, where Keras defaults to true.
  bool write_graph = false;
  // "epoch_steps_per_second" at each epoch's end and, with batch-level summaries, "batch_steps_per_second".
  bool write_steps_per_second = false;
  UpdateFreq update_freq = "epoch";
};
// tf.keras.callbacks.TensorBoard: event files in <log_dir>/train and <log_dir>/validation, with Keras 3's tags and
// steps: "epoch_<log>" (loss, metrics, learning_rate; validation logs without their "val_" prefix) at step epoch
// (from 0), "batch_<log>" every update_freq batches at the batch's number counted across epochs (from 1), and
// "evaluation_<log>_vs_iterations" in validation/ at the optimizer's iteration count after every evaluation.
// Under a multi-worker strategy only the chief writes (every worker's logs are the same), and fit() returns on every
// worker once the chief's event files are complete. Keras' profile_batch,
// embeddings_freq and write_images are not offered. Unlike Keras 3, whose batch-level record_if also drops the
// epoch summaries of epochs ending on a batch number that update_freq does not divide, every epoch is written.
std::shared_ptr<Callback> TensorBoard(TensorBoardOptions options = {});

}  // namespace lockstep::keras::callbacks
