// Keras callbacks: the progress bar, History, CSVLogger, EarlyStopping, ReduceLROnPlateau, LearningRateScheduler,
// TerminateOnNaN and ModelCheckpoint, and the registry of those made from arguments alone.
#include "lockstep/keras/callbacks.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "lockstep/core/error.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/keras/model.h"
#include "saving/saving-impl.h"

namespace lockstep::keras {

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = value;
      return;
    }
  items_.emplace_back(key, value);
}

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  return std::nullopt;
}

namespace callbacks {

namespace {
// Keras prints metric values with 4 decimals, or in scientific notation when tiny.
std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(v) > 1e-3 || v == 0 ? "%.4f" : "%.4e", v);
  return buf;
}

std::string format_per_step(double seconds) {
  char buf[32];
  if (seconds >= 1 || seconds == 0) std::snprintf(buf, sizeof buf, "%.0fs/step", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fus/step", seconds * 1e6);
  return buf;
}

std::string format_eta(double seconds) {
  char buf[32];
  const long s = std::lround(seconds);
  if (s > 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
  else if (s > 60) std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

// "auto" mode: accuracy-like quantities improve upwards, everything else downwards (Keras' rule).
bool improves_upward(const std::string& mode, const std::string& monitor) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  LS_CHECK(mode == "auto", ValueError, "mode must be \"auto\", \"min\" or \"max\", got \"", mode, "\"");
  return monitor.find("acc") != std::string::npos || monitor.rfind("fmeasure") != std::string::npos;
}
}  // namespace

// ---- ProgbarLogger ----

ProgbarLogger::ProgbarLogger(std::FILE* out) : out_(out), interactive_(isatty(fileno(out)) != 0) {}

void ProgbarLogger::start(int64_t target) {
  target_ = target;
  seen_ = 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void ProgbarLogger::update(int64_t seen, const Logs& logs, bool finalize) {
  seen_ = seen;
  if (params_.verbose == 0) return;
  auto now = std::chrono::steady_clock::now();
  // A terminal is redrawn at most every 50 ms; elsewhere only the final line of each run is written.
  if (!finalize && (!interactive_ || params_.verbose != 1 || now - last_draw_ < std::chrono::milliseconds(50))) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double per_step = seen > 0 ? elapsed / static_cast<double>(seen) : 0;
  const int64_t target = target_ > 0 ? target_ : seen;
  std::string line;
  if (params_.verbose == 1) {
    const int width = static_cast<int>(std::to_string(target).size());
    char head[64];
    std::snprintf(head, sizeof head, "%*lld/%lld [", width, static_cast<long long>(seen), static_cast<long long>(target));
    line = head;
    const int64_t filled = target > 0 ? 30 * seen / target : 30;
    if (filled > 0) line += std::string(static_cast<size_t>(filled - 1), '=') + (seen < target ? ">" : "=");
    line += std::string(static_cast<size_t>(30 - filled), '.') + "]";
    if (finalize) line += " - " + format_eta(elapsed) + " " + format_per_step(per_step);
    else line += " - ETA: " + format_eta(per_step * static_cast<double>(target - seen));
    for (const auto& [k, v] : logs.items()) line += " - " + k + ": " + format_value(v);
  } else {  // verbose 2: one line, no bar
    line = std::to_string(seen) + "/" + std::to_string(target) + " - " + format_eta(elapsed);
    for (const auto& [k, v] : logs.items()) line += " - " + k + ": " + format_value(v);
    line += " - " + format_per_step(per_step);
  }
  if (interactive_ && params_.verbose == 1) std::fprintf(out_, "\r%s\033[K", line.c_str());
  else std::fprintf(out_, "%s", line.c_str());
  if (finalize) std::fprintf(out_, "\n");
  std::fflush(out_);
}

void ProgbarLogger::on_train_begin(const Logs&) { in_fit_ = true; }

void ProgbarLogger::on_epoch_begin(int64_t epoch, const Logs&) {
  if (params_.verbose && params_.epochs > 1) {
    std::fprintf(out_, "Epoch %lld/%lld\n", static_cast<long long>(epoch + 1), static_cast<long long>(params_.epochs));
    std::fflush(out_);
  }
  start(params_.steps);
}

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) { update(batch + 1, logs, false); }
void ProgbarLogger::on_epoch_end(int64_t, const Logs& logs) { update(seen_, logs, true); }

// During fit the validation pass draws no bar of its own: its results join the epoch's line.
void ProgbarLogger::on_test_begin(const Logs&) {
  if (!in_fit_) start(params_.steps);
}
void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (!in_fit_) update(batch + 1, logs, false);
}
void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!in_fit_) update(seen_, logs, true);
}
void ProgbarLogger::on_predict_begin(const Logs&) { start(params_.steps); }
void ProgbarLogger::on_predict_batch_end(int64_t batch, const Logs& logs) { update(batch + 1, logs, false); }
void ProgbarLogger::on_predict_end(const Logs& logs) { update(seen_, logs, true); }

// ---- History ----

void History::on_train_begin(const Logs&) {}

void History::on_epoch_end(int64_t e, const Logs& logs) {
  epoch.push_back(e);
  for (const auto& [k, v] : logs.items()) history[k].push_back(v);
}

// ---- CSVLogger ----

namespace {
class CSVLoggerCallback : public Callback {
 public:
  CSVLoggerCallback(std::string filename, CSVLoggerOptions o) : filename_(std::move(filename)), opt_(o) {}
  void on_train_begin(const Logs&) override {
    check_writable(filename_, "CSVLogger file");
    text_.clear();
    if (opt_.append) {
      std::ifstream in(filename_);
      text_.assign(std::istreambuf_iterator<char>(in), {});
    }
    header_written_ = !text_.empty();
  }
  // The whole file is rewritten atomically each epoch (it is small), so a crash or a full disk never
  // leaves a torn row.
  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    std::vector<std::pair<std::string, double>> items = logs.items();
    std::sort(items.begin(), items.end());
    std::ostringstream row;
    if (!header_written_) {
      row << "epoch";
      for (const auto& [k, v] : items) row << opt_.separator << k;
      row << "\n";
      header_written_ = true;
    }
    row << epoch;
    for (const auto& [k, v] : items) row << opt_.separator << v;
    row << "\n";
    text_ += row.str();
    write_file_atomically(filename_, text_);
  }

 private:
  std::string filename_;
  CSVLoggerOptions opt_;
  std::string text_;
  bool header_written_ = false;
};

// Tracks the best value of a monitored quantity (EarlyStopping and ModelCheckpoint share the rule).
struct Monitor {
  std::string key;
  bool upward;
  double min_delta;
  double best;
  Monitor(std::string k, const std::string& mode, double delta)
      : key(std::move(k)), upward(improves_upward(mode, key)), min_delta(std::abs(delta)),
        best(upward ? -INFINITY : INFINITY) {}
  std::optional<double> read(const Logs& logs) const {
    std::optional<double> v = logs.get(key);
    if (!v) {
      std::string have;
      for (const auto& [k, x] : logs.items()) have += (have.empty() ? "" : ", ") + k;
      log(LogLevel::warning, "monitored quantity '", key, "' is not in the logs (available: ", have, ")");
    }
    return v;
  }
  bool improved(double v) const { return upward ? v - min_delta > best : v + min_delta < best; }
};

class EarlyStoppingCallback : public Callback {
 public:
  explicit EarlyStoppingCallback(EarlyStoppingOptions o) : opt_(std::move(o)), monitor_(opt_.monitor, opt_.mode, opt_.min_delta) {}
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    stopped_epoch_ = -1;
    monitor_.best = opt_.baseline ? *opt_.baseline : (monitor_.upward ? -INFINITY : INFINITY);
    best_weights_.clear();
  }
  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    std::optional<double> v = monitor_.read(logs);
    if (!v || epoch < opt_.start_from_epoch) return;
    if (opt_.restore_best_weights && best_weights_.empty()) best_weights_ = model_->get_weights();
    ++wait_;
    if (monitor_.improved(*v)) {
      monitor_.best = *v;
      wait_ = 0;
      if (opt_.restore_best_weights) best_weights_ = model_->get_weights();
      return;
    }
    if (wait_ >= opt_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      model_->set_stop_training(true);
      if (opt_.restore_best_weights && !best_weights_.empty()) model_->set_weights(best_weights_);
    }
  }
  void on_train_end(const Logs&) override {
    if (stopped_epoch_ >= 0 && opt_.verbose) std::printf("Epoch %lld: early stopping\n", static_cast<long long>(stopped_epoch_ + 1));
  }

 private:
  EarlyStoppingOptions opt_;
  Monitor monitor_;
  int64_t wait_ = 0, stopped_epoch_ = -1;
  std::vector<Tensor> best_weights_;
};

class LearningRateSchedulerCallback : public Callback {
 public:
  LearningRateSchedulerCallback(std::function<double(int64_t, double)> f, int verbose) : f_(std::move(f)), verbose_(verbose) {}
  void on_epoch_begin(int64_t epoch, const Logs&) override {
    auto opt = model_->optimizer();
    LS_CHECK(opt, RuntimeError, "LearningRateScheduler needs a compiled model");
    const double lr = f_(epoch, opt->learning_rate());
    LS_CHECK(std::isfinite(lr), ValueError, "the learning-rate schedule returned ", lr, " for epoch ", epoch);
    opt->set_learning_rate(lr);
    if (verbose_) std::printf("\nEpoch %lld: LearningRateScheduler setting learning rate to %g.\n", static_cast<long long>(epoch + 1), lr);
  }

 private:
  std::function<double(int64_t, double)> f_;
  int verbose_;
};

class TerminateOnNaNCallback : public Callback {
 public:
  explicit TerminateOnNaNCallback(TerminateOnNaNOptions o) : opt_(o) {}
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    std::optional<double> loss = logs.get("loss");
    if (!loss || std::isfinite(*loss)) return;
    LS_CHECK(!opt_.raise_error, RuntimeError, "NaN or Inf found in the loss at batch ", batch,
             " (TerminateOnNaN(raise_error=True)): lower the learning rate or check the data");
    std::printf("Batch %lld: Invalid loss, terminating training\n", static_cast<long long>(batch));
    model_->set_stop_training(true);
  }

 private:
  TerminateOnNaNOptions opt_;
};

class ReduceLROnPlateauCallback : public Callback {
 public:
  explicit ReduceLROnPlateauCallback(ReduceLROnPlateauOptions o)
      : opt_(std::move(o)), monitor_(opt_.monitor, opt_.mode, opt_.min_delta) {
    LS_CHECK(opt_.factor < 1.0, ValueError, "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=",
             opt_.factor);
  }
  void on_train_begin(const Logs&) override {
    monitor_.best = monitor_.upward ? -INFINITY : INFINITY;
    wait_ = cooldown_left_ = 0;
  }
  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    std::optional<double> v = monitor_.read(logs);
    if (!v) return;
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      wait_ = 0;
    }
    if (monitor_.improved(*v)) {
      monitor_.best = *v;
      wait_ = 0;
      return;
    }
    if (cooldown_left_ > 0 || ++wait_ < opt_.patience) return;
    const auto optimizer = model_->optimizer();
    LS_CHECK(optimizer, RuntimeError, "ReduceLROnPlateau needs a compiled model");
    const double old_lr = optimizer->learning_rate();
    // Keras compares with the float32 min_lr: a rate already at it is not reduced again.
    if (old_lr <= static_cast<float>(opt_.min_lr)) return;
    const double new_lr = std::max(old_lr * opt_.factor, opt_.min_lr);
    optimizer->set_learning_rate(new_lr);
    if (opt_.verbose > 0)
      std::printf("\nEpoch %lld: ReduceLROnPlateau reducing learning rate to %g.\n", static_cast<long long>(epoch + 1),
                  new_lr);
    cooldown_left_ = opt_.cooldown;
    wait_ = 0;
  }

 private:
  ReduceLROnPlateauOptions opt_;
  Monitor monitor_;
  int64_t wait_ = 0, cooldown_left_ = 0;
};

// Replaces "{epoch}", "{epoch:02d}", "{batch}" and "{key:.4f}"-style fields the way Python's str.format does;
// `batch` is given for step-based saves only.
std::string format_path(const std::string& pattern, int64_t epoch, std::optional<int64_t> batch, const Logs& logs) {
  static const std::regex field(R"(\{([A-Za-z_]+)(?::([0-9]*)(\.[0-9]+)?([df]))?\})");
  std::string out;
  auto begin = std::sregex_iterator(pattern.begin(), pattern.end(), field);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out += pattern.substr(last, static_cast<size_t>(m.position()) - last);
    last = static_cast<size_t>(m.position() + m.length());
    const std::string key = m[1];
    double value;
    if (key == "epoch") value = static_cast<double>(epoch + 1);
    else if (key == "batch" && batch) value = static_cast<double>(*batch + 1);
    else if (auto v = logs.get(key)) value = *v;
    else if (key == "batch")
      throw ValueError(make_message("ModelCheckpoint filepath \"", pattern, "\" names 'batch', which is known only ",
                                    "when saving every N steps: give save_freq a number of steps, or drop {batch}"));
    else throw ValueError(make_message("ModelCheckpoint filepath \"", pattern, "\" names '", key, "', which is not in the logs"));
    const bool counter = key == "epoch" || key == "batch";
    std::string spec = "%" + std::string(m[2]) + std::string(m[3]) + (m[4].matched ? std::string(m[4]) : counter ? "d" : "f");
    char buf[64];
    if (spec.back() == 'd') std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<int>(value));
    else std::snprintf(buf, sizeof buf, spec.c_str(), value);
    out += buf;
  }
  return out + pattern.substr(last);
}

class ModelCheckpointCallback : public Callback {
 public:
  ModelCheckpointCallback(std::string path, ModelCheckpointOptions o)
      : path_(std::move(path)), opt_(std::move(o)), monitor_(opt_.monitor, opt_.mode, 0) {}
  void on_train_begin(const Logs&) override { steps_since_save_ = 0; }
  void on_epoch_begin(int64_t epoch, const Logs&) override { epoch_ = epoch; }
  void on_train_batch_end(int64_t batch, const Logs& logs) override {
    if (opt_.save_freq.steps == 0 || ++steps_since_save_ < opt_.save_freq.steps) return;
    steps_since_save_ = 0;
    save(epoch_, batch, logs);
  }
  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    if (opt_.save_freq.steps == 0) save(epoch, std::nullopt, logs);
  }

 private:
  // Every worker calls it: the chief of the model's strategy decides and writes (save and save_weights create
  // the directory the path names, as Keras' callback does), and the others return once its file is durable.
  void save(int64_t epoch, std::optional<int64_t> batch, const Logs& logs) {
    const std::string path = format_path(path_, epoch, batch, logs);
    detail::write_on_chief(*model_, path, [&] {
      if (opt_.save_best_only) {
        std::optional<double> v = monitor_.read(logs);
        if (!v || !monitor_.improved(*v)) return;
        monitor_.best = *v;
      }
      if (opt_.save_weights_only) model_->save_weights(path);
      else model_->save(path);
      if (opt_.verbose) std::printf("\nEpoch %lld: saving model to %s\n", static_cast<long long>(epoch + 1), path.c_str());
    });
  }

  std::string path_;
  ModelCheckpointOptions opt_;
  Monitor monitor_;
  int64_t epoch_ = 0, steps_since_save_ = 0;
};
}  // namespace

std::shared_ptr<Callback> CSVLogger(const std::string& filename, CSVLoggerOptions options) {
  return std::make_shared<CSVLoggerCallback>(filename, options);
}
std::shared_ptr<Callback> EarlyStopping(EarlyStoppingOptions options) {
  return std::make_shared<EarlyStoppingCallback>(std::move(options));
}
std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int64_t, double)> schedule, int verbose) {
  return std::make_shared<LearningRateSchedulerCallback>(std::move(schedule), verbose);
}
std::shared_ptr<Callback> TerminateOnNaN(TerminateOnNaNOptions options) {
  return std::make_shared<TerminateOnNaNCallback>(options);
}
std::shared_ptr<Callback> ReduceLROnPlateau(ReduceLROnPlateauOptions options) {
  return std::make_shared<ReduceLROnPlateauCallback>(std::move(options));
}

namespace {
// A complete config's integer (an epoch count): a JSON integer, or a float holding one (Keras' patience=10.0).
int64_t count(const nlohmann::json& c, const char* key) {
  const nlohmann::json& v = c.at(key);
  LS_CHECK(v.is_number() && std::floor(v.get<double>()) == v.get<double>(), ValueError, key,
           " must be a whole number, got ", v.dump().substr(0, 40));
  return static_cast<int64_t>(v.get<double>());
}
Param monitor() { return {"monitor", "val_loss", "the log watched: \"val_loss\", \"accuracy\", ..."}; }
Param verbose() { return {"verbose", 0, "1 prints what the callback does"}; }
Param mode() {
  return {"mode", "auto", "\"min\", \"max\", or \"auto\" (max for accuracy-like names)", {"auto", "min", "max"}};
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
        {{"raise_error", false, "raise a RuntimeError instead of stopping training"}}}});
  return r;
}
std::shared_ptr<Callback> ModelCheckpoint(const std::string& filepath, ModelCheckpointOptions options) {
  return std::make_shared<ModelCheckpointCallback>(filepath, std::move(options));
}

}  // namespace callbacks
}  // namespace lockstep::keras
