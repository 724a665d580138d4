// `lockstep evaluate`: the test loss and accuracy of a saved model, or a sidecar evaluator (TF's
// SidecarEvaluator) that evaluates each new checkpoint a training job writes until the job ends. The sidecar
// only reads files the chief writes atomically: it never joins the training collectives nor waits for them.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli.h"
#include "flags.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "lockstep/data/datasets.h"
#include "lockstep/train/checkpoint.h"

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;

struct EvaluateArgs {
  std::string model;  // a saved model; with --watch also a built-in model name
  std::string watch;  // a checkpoint directory to watch
  std::string dataset = "fashion_mnist";
  int64_t batch_size = 256;
  int threads = 0;
  std::string metrics_out;
  double idle_timeout = 60;
  int64_t max_checkpoints = 0;
  int64_t steps = 0;
};

// The test split as the training command feeds it: images scaled to [0, 1], labels as int64.
data::Dataset test_dataset(const std::string& name, int64_t batch_size) {
  datasets::Split test = name == "fashion_mnist" ? datasets::fashion_mnist::load_data().second
                         : name == "mnist"       ? datasets::mnist::load_data().second
                                                 : datasets::load_idx_directory(name).second;
  LS_CHECK(test.images.dim(0) > 0, ValueError, "data set '", name,
           "' has no test images (t10k-images-idx3-ubyte): evaluation needs at least one");
  return data::Dataset::from_tensor_slices(cast(test.images, DType::float32) / 255.0, cast(test.labels, DType::int64))
      .batch(batch_size);
}

// A built-in model (compiled as lockstep train compiles it) or a saved one, compiled as saved.
keras::Model evaluation_model(const std::string& name) {
  keras::Model model = is_builtin_model(name) ? build_model(name) : keras::Model::load_model(name);
  if (!model.loss())
    model.compile({.optimizer = "adam",
                   .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
  return model;
}

double metric(const std::map<std::string, double>& results, const std::string& name) {
  auto it = results.find(name);
  return it == results.end() ? 0.0 : it->second;
}

int run_evaluate(const EvaluateArgs& a) {
  set_num_threads(a.threads);
  if (!a.watch.empty())
    return run_sidecar_evaluator({.directory = a.watch,
                                  .model = a.model.empty() ? "tutorial_cnn" : a.model,
                                  .dataset = a.dataset,
                                  .batch_size = a.batch_size,
                                  .idle_timeout_s = a.idle_timeout,
                                  .max_checkpoints = a.max_checkpoints,
                                  .steps = a.steps});
  LS_CHECK(!a.model.empty(), ValueError,
           "lockstep evaluate needs --model DIR (a saved model) or --watch DIR (a checkpoint directory)");
  if (!a.metrics_out.empty()) check_writable(a.metrics_out, "--metrics-out file");
  keras::Model model = keras::Model::load_model(a.model);
  auto result = model.evaluate(test_dataset(a.dataset, a.batch_size), {.verbose = 0});
  std::printf("Test loss: %.4f - test accuracy: %.4f\n", metric(result, "loss"), metric(result, "accuracy"));
  if (!a.metrics_out.empty()) {
    nlohmann::json j = {{"test_loss", metric(result, "loss")}, {"test_accuracy", metric(result, "accuracy")}};
    write_file_atomically(a.metrics_out, j.dump(2) + "\n");
  }
  return 0;
}

// A checkpoint's metadata entry; `offset` turns the 0-based epoch into the 1-based one Keras prints.
std::string metadata_value(const std::map<std::string, std::string>& meta, const char* key, int64_t offset = 0) {
  auto it = meta.find(key);
  if (it == meta.end()) return "?";
  try {
    return std::to_string(std::stoll(it->second) + offset);
  } catch (const std::exception&) {
    return it->second;
  }
}

}  // namespace

int run_sidecar_evaluator(const SidecarOptions& o) {
  using Clock = std::chrono::steady_clock;
  keras::Model model = evaluation_model(o.model);  // no strategy: nothing here joins the workers
  const data::Dataset test = test_dataset(o.dataset, o.batch_size);
  train::Checkpoint checkpoint({{"model", model}});
  const std::string index = (fs::path(o.directory) / "checkpoint").string();
  const auto idle_limit = std::chrono::duration<double>(o.idle_timeout_s);
  const auto poll = std::chrono::milliseconds(200);

  std::printf("Sidecar evaluator: watching %s\n", o.directory.c_str());
  std::fflush(stdout);
  std::string last;           // the newest checkpoint looked at
  bool seen_index = false;    // the training job has written a checkpoint index here
  int64_t evaluated = 0;
  Clock::time_point last_new = Clock::now();
  std::string reason;
  while (reason.empty()) {
    std::error_code ec;
    const bool has_index = fs::exists(index, ec);
    std::optional<std::string> latest;
    try {
      latest = train::latest_checkpoint(o.directory);
    } catch (const Error& e) {  // an index being replaced, or damaged: the next poll decides
      log(LogLevel::warning, "sidecar evaluator: cannot read the checkpoint index in ", o.directory, ": ", e.what());
    }
    if (latest && *latest != last) {
      last = *latest;
      last_new = Clock::now();
      try {
        checkpoint.restore(*latest).expect_partial();
      } catch (const NotFoundError& e) {  // pruned (or the finished job's backup removed) since it was listed
        log(LogLevel::warning, "sidecar evaluator: skipping checkpoint ", *latest, ", gone before it was read: ", e.what());
        continue;
      } catch (const DataLossError& e) {
        log(LogLevel::warning, "sidecar evaluator: skipping damaged checkpoint ", *latest, ": ", e.what());
        continue;
      }
      const auto& meta = checkpoint.metadata();
      auto result = model.evaluate(test, {.verbose = 0});
      ++evaluated;
      std::printf("Checkpoint %s (step %s, epoch %s): loss: %.4f - accuracy: %.4f\n", latest->c_str(),
                  metadata_value(meta, "step").c_str(), metadata_value(meta, "epoch", 1).c_str(), metric(result, "loss"),
                  metric(result, "accuracy"));
      std::fflush(stdout);
      if (o.max_checkpoints > 0 && evaluated >= o.max_checkpoints)
        reason = make_message("evaluated --max-checkpoints ", o.max_checkpoints);
      else if (const auto step = parse_number<int64_t>(metadata_value(meta, "step"), [](int64_t) { return true; });
               o.steps > 0 && step && *step >= o.steps)
        reason = make_message("reached step ", o.steps);
      continue;
    }
    seen_index = seen_index || has_index;
    if (seen_index && !has_index) {
      // BackupAndRestore and the custom loop remove their backup once training has completed.
      reason = "training finished (its checkpoints were removed)";
    } else if (Clock::now() - last_new > idle_limit) {
      LS_CHECK(evaluated > 0, DeadlineExceededError, "sidecar evaluator: no checkpoint appeared in ", o.directory,
               " within ", o.idle_timeout_s, " s: is the training job writing there? (wait longer with --idle-timeout)");
      reason = make_message("no new checkpoint for ", o.idle_timeout_s, " s");
    } else {
      std::this_thread::sleep_for(poll);
    }
  }
  std::printf("Sidecar evaluator: %lld checkpoints evaluated; stopped: %s\n", static_cast<long long>(evaluated),
              reason.c_str());
  return 0;
}

std::function<int()> add_evaluate_command(CLI::App& app) {
  auto a = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "test loss and accuracy of a saved model, or of each new checkpoint of a training job (--watch)");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const CLI::Validator non_empty(
      [](std::string& s) { return s.empty() ? "'' is not a path: give a file or directory" : ""; }, "");
  cmd->add_option("--model", a->model,
                  "saved model directory (lockstep train --save-model); with --watch: " +
                      keras::join_names(builtin_model_names(), " | ") + " | a saved model (default tutorial_cnn)")
      ->check(non_empty);
  cmd->add_option("--watch", a->watch,
                  "sidecar evaluator: evaluate each new checkpoint in this directory (--backup-dir of the training "
                  "job) until training ends")
      ->check(non_empty);
  cmd->add_option("--dataset", a->dataset, "fashion_mnist | mnist | a directory of IDX files");
  // Read and checked as lockstep train reads its numbers (CLI11's Range lets NaN through).
  auto at_least = [](auto lo) { return [lo](auto v) { return v >= lo; }; };
  add_number(cmd, "--batch-size", a->batch_size, at_least(int64_t{1}), "an integer from 1 to 2^63-1",
             "evaluation batch size");
  add_number(cmd, "--threads", a->threads, at_least(0), "an integer from 0 to 2^31-1",
             "intra-op threads; 0: all cores");
  cmd->add_option("--metrics-out", a->metrics_out, "JSON file for test_loss and test_accuracy")->check(non_empty);
  add_number(
      cmd, "--idle-timeout", a->idle_timeout, [](double v) { return v >= 0 && v <= 1e9; },
      "a number of seconds from 0 to 1e9", "with --watch: stop after this many seconds without a new checkpoint");
  add_number(cmd, "--max-checkpoints", a->max_checkpoints, at_least(int64_t{0}), "an integer from 0 to 2^63-1",
             "with --watch: stop after this many; 0: no limit");
  add_number(cmd, "--steps", a->steps, at_least(int64_t{0}), "an integer from 0 to 2^63-1",
             "with --watch: stop after a checkpoint at this training step or later; 0: no target");
  return [a] { return run_evaluate(*a); };
}

}  // namespace lockstep::cli
