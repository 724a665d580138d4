// The callback registry: each callback's parameter table (Keras' arguments, defaults from its options struct where
// it has one), its factory from a config. LearningRateScheduler is not here: it takes a function, which no config
// holds (Python's class wraps the function itself, python/lockstep/keras/callbacks.py).
#include "lockstep/keras/callbacks/registry.h"

#include <cmath>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"
#include "lockstep/keras/callbacks.h"

namespace lockstep::keras::callbacks {

namespace {
// A complete config's integer (an epoch count): a JSON integer, or a float holding one (Keras' patience=10.0).
int64_t count(const nlohmann::json& c, const char* key) {
  const nlohmann::json& v = c.at(key);
  LS_CHECK(v.is_number() && std::floor(v.get<double>()) == v.get<double>(), ValueError, key,
           " must be a whole number, got ", v.dump().substr(0, 40));
  return static_cast<int64_t>(v.get<double>());
}
// A complete config's save_freq: "epoch" or a number of steps.
SaveFreq save_freq(const nlohmann::json& c) {
  if (c.at("save_freq").is_string()) return SaveFreq(c["save_freq"].get<std::string>().c_str());
  return SaveFreq(count(c, "save_freq"));
}
// A complete config's update_freq: "epoch", "batch" or a number of batches.
UpdateFreq update_freq(const nlohmann::json& c) {
  if (c.at("update_freq").is_string()) return UpdateFreq(c["update_freq"].get<std::string>().c_str());
  return UpdateFreq(count(c, "update_freq"));
}
Param monitor() { return {"monitor", "val_loss", "the log watched: \"val_loss\", \"accuracy\", ..."}; }
Param verbose() { return {"verbose", 0, "1 prints what the callback does"}; }
Param mode() {
  return {"mode", "auto", "\"min\", \"max\", or \"auto\" (max for accuracy-like names)", {"auto", "min", "max"}};
}
Param save_freq_param() { return {"save_freq", "epoch", "\"epoch\" (every epoch's end) or a number of steps"}; }

CallbackPtr model_checkpoint(const nlohmann::json& c) {
  return ModelCheckpoint(c.at("filepath"), {.monitor = c.at("monitor"),
                                            .verbose = static_cast<int>(count(c, "verbose")),
                                            .save_best_only = c.at("save_best_only").get<bool>(),
                                            .save_weights_only = c.at("save_weights_only").get<bool>(),
                                            .mode = c.at("mode"),
                                            .save_freq = save_freq(c)});
}
std::vector<Param> model_checkpoint_params() {
  const ModelCheckpointOptions d;
  return {{"filepath", kRequired, "where to save; {epoch:02d}, {batch} and {val_loss:.4f} take their values"},
          monitor(),
          verbose(),
          {"save_best_only", d.save_best_only, "save only when the monitored log improves"},
          {"save_weights_only", d.save_weights_only, "save the weights (save_weights), not the whole model"},
          mode(),
          save_freq_param(),
          Param::fixed("initial_value_threshold", nullptr, "not implemented by lockstep")};
}

CallbackPtr backup_and_restore(const nlohmann::json& c) {
  return BackupAndRestore({.backup_dir = c.at("backup_dir"),
                           .save_freq = save_freq(c),
                           .delete_checkpoint = c.at("delete_checkpoint").get<bool>()});
}
std::vector<Param> backup_and_restore_params() {
  const BackupAndRestoreOptions d;
  return {{"backup_dir", kRequired, "the folder of the backups"},
          save_freq_param(),
          {"double_checkpoint", false, "ignored: lockstep always keeps the two newest backups"},
          {"delete_checkpoint", d.delete_checkpoint, "remove the backups when fit() ends normally"}};
}

CallbackPtr tensorboard(const nlohmann::json& c) {
  if (const nlohmann::json p = c.value("profile_batch", nlohmann::json(0)); !(p.is_number() && p == 0))
    log(LogLevel::warning, "TensorBoard(profile_batch=", p.dump().substr(0, 40),
        "): lockstep has no profiler trace to write; no profile is recorded");
  return TensorBoard({.log_dir = c.at("log_dir"),
                      .histogram_freq = count(c, "histogram_freq"),
                      .write_graph = c.at("write_graph").get<bool>(),
                      .write_steps_per_second = c.at("write_steps_per_second").get<bool>(),
                      .update_freq = update_freq(c)});
}
std::vector<Param> tensorboard_params() {
  const TensorBoardOptions d;
  const char* no = "not implemented by lockstep";
  // write_graph takes Keras' default, true, where TensorBoardOptions' is false.
  return {{"log_dir", d.log_dir, "the folder of the event files (train/ and validation/ under it)"},
          {"histogram_freq", d.histogram_freq, "every N epochs a histogram of every weight; 0: none"},
          {"write_graph", true, "the model's config, for TensorBoard's graph of Keras' model"},
          Param::fixed("write_images", false, no),
          {"write_steps_per_second", d.write_steps_per_second, "write the steps per second of epochs and batches"},
          {"update_freq", "epoch", "\"epoch\", \"batch\" or a number of batches between batch-level summaries"},
          {"profile_batch", 0, "ignored, with a warning when not 0: lockstep writes no profile"},
          Param::fixed("embeddings_freq", 0, no),
          Param::fixed("embeddings_metadata", nullptr, no)};
}
}  // namespace

const Registry<CallbackPtr>& registry() {
  static const Registry<CallbackPtr> r(
      "callback",
      {{"EarlyStopping",
        [](const nlohmann::json& c) {
          return EarlyStopping({.monitor = c.at("monitor"),
                                .min_delta = c.at("min_delta").get<double>(),
                                .patience = count(c, "patience"),
                                .verbose = static_cast<int>(count(c, "verbose")),
                                .mode = c.at("mode"),
                                .baseline = c.contains("baseline") && !c["baseline"].is_null()
                                                ? std::optional<double>(c["baseline"].get<double>())
                                                : std::nullopt,
                                .restore_best_weights = c.at("restore_best_weights").get<bool>(),
                                .start_from_epoch = count(c, "start_from_epoch")});
        },
        {},
        {monitor(),
         {"min_delta", 0, "a smaller change is no improvement"},
         {"patience", 0, "epochs without improvement before training stops"},
         verbose(),
         mode(),
         {"baseline", nullptr, "a value the monitored log must improve on"},
         {"restore_best_weights", false, "end with the best epoch's weights"},
         {"start_from_epoch", 0, "epochs of warm-up before watching"}}},
       {"ReduceLROnPlateau",
        [](const nlohmann::json& c) {
          return ReduceLROnPlateau({.monitor = c.at("monitor"),
                                    .factor = c.at("factor").get<double>(),
                                    .patience = count(c, "patience"),
                                    .verbose = static_cast<int>(count(c, "verbose")),
                                    .mode = c.at("mode"),
                                    .min_delta = c.at("min_delta").get<double>(),
                                    .cooldown = count(c, "cooldown"),
                                    .min_lr = c.at("min_lr").get<double>()});
        },
        {},
        [] {
          const ReduceLROnPlateauOptions d;
          return std::vector<Param>{monitor(),
                                    {"factor", d.factor, "the learning rate is multiplied by it (< 1)"},
                                    {"patience", d.patience, "epochs without improvement before a reduction"},
                                    verbose(),
                                    mode(),
                                    {"min_delta", d.min_delta, "a smaller change is no improvement"},
                                    {"cooldown", d.cooldown, "epochs after a reduction before counting again"},
                                    {"min_lr", d.min_lr, "the learning rate's floor"}};
        }()},
       {"CSVLogger",
        [](const nlohmann::json& c) {
          const std::string separator = c.at("separator");
          LS_CHECK(separator.size() == 1, ValueError, "CSVLogger: separator must be one character, got \"", separator,
                   "\"");
          return CSVLogger(c.at("filename"), {.separator = separator[0], .append = c.at("append").get<bool>()});
        },
        {},
        {{"filename", kRequired, "the CSV file: epoch and every log, one row per epoch"},
         {"separator", ",", "the column separator (one character)"},
         {"append", false, "add to an existing file instead of replacing it"}}},
       {"TerminateOnNaN",
        [](const nlohmann::json& c) { return TerminateOnNaN({.raise_error = c.at("raise_error").get<bool>()}); },
        {},
        {{"raise_error", false, "raise a RuntimeError instead of stopping training"}}},
       {"ProgbarLogger", [](const nlohmann::json&) -> CallbackPtr { return std::make_shared<ProgbarLogger>(); }},
       {"ModelCheckpoint", model_checkpoint, {}, model_checkpoint_params()},
       {"BackupAndRestore", backup_and_restore, {}, backup_and_restore_params()},
       {"TensorBoard", tensorboard, {}, tensorboard_params()}});
  return r;
}

}  // namespace lockstep::keras::callbacks
