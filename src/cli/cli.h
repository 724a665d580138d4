// Private to the lockstep binary: subcommand registration and the built-in models.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lockstep/keras/model.h"

namespace lockstep::cli {

// Adds `lockstep train` to the app; the returned function runs it after parsing and gives the exit code.
std::function<int()> add_train_command(CLI::App& app);

// Adds `lockstep launch` (N workers on this host, each with its TF_CONFIG); the returned function runs it.
std::function<int()> add_launch_command(CLI::App& app);

// Adds `lockstep tf-config` (prints the resolved role or the TF_CONFIG error); the returned function runs it.
std::function<int()> add_tf_config_command(CLI::App& app);

// Adds `lockstep bench step` (warm Keras fit steps on synthetic data) and `lockstep bench allreduce` (the
// cross-worker all-reduce per buffer size), what bench/compare.sh measures; the returned function runs them.
std::function<int()> add_bench_command(CLI::App& app);

// Adds `lockstep evaluate` (a saved model's test loss and accuracy, or a sidecar evaluator with --watch).
std::function<int()> add_evaluate_command(CLI::App& app);
// `lockstep classes`: the Keras classes and their arguments, from the registries (Markdown).
std::function<int()> add_classes_command(CLI::App& app);

// TF's SidecarEvaluator: evaluates each new checkpoint that latest_checkpoint(directory) names, one line per
// checkpoint with its step and epoch, reading only files the chief writes atomically (never joining the
// training collectives). Stops when the training job removes its checkpoints at the end (BackupAndRestore
// does), after a checkpoint at `steps` or later, after `max_checkpoints`, or after `idle_timeout_s` without
// a new one (DeadlineExceededError when none came at all). Returns the exit code.
struct SidecarOptions {
  std::string directory;
  std::string model = "tutorial_cnn";  // a built-in model name or a saved model directory
  std::string dataset = "fashion_mnist";
  int64_t batch_size = 256;
  double idle_timeout_s = 60;
  int64_t max_checkpoints = 0;  // 0: no limit
  int64_t steps = 0;            // 0: no target
};
int run_sidecar_evaluator(const SidecarOptions& options);

// A built-in model by name: "tutorial_cnn" (the multi-worker tutorial model) or "fashion_cnn" (the
// custom-training tutorial model); ValueError naming the built-in models otherwise.
keras::Sequential build_model(const std::string& name);
// The built-in models' names, which the commands offer and list.
std::vector<std::string> builtin_model_names();
bool is_builtin_model(const std::string& name);

// `lockstep train --data SPEC`'s options: where the data is and how its examples map to the model's inputs.
struct UserDataOptions {
  std::string spec;             // tfrecord:PATTERN[,PATTERN...] | images:DIR | csv:PATTERN
  std::string validation_spec;  // the same forms, or empty
  std::string feature_key;      // tfrecord: the tf.train.Example feature the model takes
  std::string label_key = "label";
  std::string label_dtype = "int64";  // tfrecord: int64 | float32
  std::string compression;            // tfrecord: "" | GZIP
  int64_t shuffle_buffer = 10000;     // tfrecord: examples in the shuffle buffer
  double validation_split = 0;        // images: the fraction held out for validation
  std::string label_column = "label";  // csv
  uint64_t seed = 1;
  bool verbose = true;  // image_dataset_from_directory's "Found N files ..." lines
};
struct UserData {
  data::Dataset train;  // batched by the global batch, shuffled, repeated when asked
  std::optional<data::Dataset> validation;
};
// The datasets of --data and --validation-data for a model taking features of `feature_shape` and `feature_dtype`.
// Throws ValueError for a malformed spec or options that do not fit the data's kind, before any file is read.
UserData load_user_data(const UserDataOptions& options, const Shape& feature_shape, DType feature_dtype,
                        int64_t global_batch, bool repeat);

// Memory the system can give this process without swapping (MemAvailable), if the kernel says.
std::optional<double> available_memory_bytes();

// SHA-256 over every variable's raw little-endian bytes, in order, as lowercase hex.
std::string weights_sha256(const keras::Model& model);

}  // namespace lockstep::cli
