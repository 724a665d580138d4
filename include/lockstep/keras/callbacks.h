// Keras callbacks: hooks into fit/evaluate/predict (on_{train,test,predict}_{begin,end},
// on_epoch_{begin,end}, on_{train,test,predict}_batch_{begin,end}) and the standard ones built on them.
#pragma once
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/keras/registry.h"

namespace lockstep::keras {

class Model;

// The numbers a training step or epoch reports, in insertion order ("loss", "accuracy", "val_loss", ...).
class Logs {
 public:
  void set(const std::string& key, double value);
  std::optional<double> get(const std::string& key) const;
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<std::pair<std::string, double>> items_;
};

// The parameters of a fit/evaluate run that callbacks read (Keras: callback.params).
struct RunParams {
  int64_t epochs = 1;
  int64_t steps = -1;  // steps per epoch; -1 when unknown until the data runs out
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;
  void set_model(Model* model) { model_ = model; }
  void set_params(const RunParams& params) { params_ = params; }

  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(int64_t /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(int64_t /*epoch*/, const Logs&) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, const Logs&) {}

 protected:
  Model* model_ = nullptr;
  RunParams params_;
};
using CallbackPtr = std::shared_ptr<Callback>;

namespace callbacks {

// The callbacks made from Keras arguments alone (not those that take a function, a path they check, or a
// strategy's state), by Keras class name: the Python classes of these are generated from this registry.
const Registry<CallbackPtr>& registry();

// Keras' progress bar: "Epoch 1/3" then "70/70 [==============================] - 1s 14ms/step - loss: 2.2653
// - accuracy: 0.1921", redrawn in place on a terminal, one line per epoch otherwise.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(std::FILE* out = stdout);
  void on_train_begin(const Logs&) override;
  void on_epoch_begin(int64_t epoch, const Logs&) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int64_t epoch, const Logs& logs) override;
  void on_test_begin(const Logs&) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs&) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void start(int64_t target);
  void update(int64_t seen, const Logs& logs, bool finalize);
  std::FILE* out_;
  bool interactive_;
  bool in_fit_ = false;
  int64_t target_ = -1, seen_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// Records every epoch's logs; fit() returns it.
class History : public Callback {
 public:
  void on_train_begin(const Logs&) override;
  void on_epoch_end(int64_t epoch, const Logs& logs) override;
  std::vector<int64_t> epoch;
  std::map<std::string, std::vector<double>> history;
};

struct CSVLoggerOptions {
  char separator = ',';
  bool append = false;
};
// Writes "epoch,<sorted log keys>" and one row per epoch to a CSV file.
std::shared_ptr<Callback> CSVLogger(const std::string& filename, CSVLoggerOptions options = {});

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

// Sets the optimizer's learning rate at each epoch's start to schedule(epoch, current_lr).
std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int64_t epoch, double lr)> schedule, int verbose = 0);

// Stops training when a batch's loss is NaN or infinite; with raise_error, fit() throws instead.
struct TerminateOnNaNOptions {
  bool raise_error = false;
};
std::shared_ptr<Callback> TerminateOnNaN(TerminateOnNaNOptions options = {});

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

// When ModelCheckpoint or BackupAndRestore saves: "epoch" (at the end of every epoch) or every N training steps.
struct SaveFreq {
  SaveFreq(const char* when);
  SaveFreq(int64_t every_n_steps);
  int64_t steps = 0;  // 0: every epoch
};

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

}  // namespace callbacks
}  // namespace lockstep::keras
