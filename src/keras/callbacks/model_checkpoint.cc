// keras.callbacks.ModelCheckpoint: the model or its weights saved by the chief every epoch or every N steps, to a
// path formatted from the epoch, batch and logs.
#include "lockstep/keras/callbacks/model_checkpoint.h"

#include <cstdio>
#include <optional>
#include <regex>

#include "../saving/saving-impl.h"
#include "callbacks-impl.h"
#include "lockstep/core/error.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::callbacks {

namespace {
using detail::Monitor;

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
    // Appended to "%", not "%" + ...: GCC 12 warns (-Wrestrict) falsely on a const char* + string here.
    std::string spec = "%";
    spec += std::string(m[2]) + std::string(m[3]) + (m[4].matched ? std::string(m[4]) : counter ? "d" : "f");
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

std::shared_ptr<Callback> ModelCheckpoint(const std::string& filepath, ModelCheckpointOptions options) {
  return std::make_shared<ModelCheckpointCallback>(filepath, std::move(options));
}

}  // namespace lockstep::keras::callbacks
