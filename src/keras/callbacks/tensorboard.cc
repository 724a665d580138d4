// keras.callbacks.TensorBoard on the summary API: Keras 3's tags, steps and train/validation runs, written by the
// chief alone.
#include "lockstep/keras/callbacks/tensorboard.h"

#include <chrono>
#include <filesystem>
#include <map>

#include "../saving/saving-impl.h"
#include "lockstep/core/error.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/train/summary.h"

namespace lockstep::keras::callbacks {

UpdateFreq::UpdateFreq(const char* when) {
  const std::string w = when ? when : "";
  LS_CHECK(w == "epoch" || w == "batch", ValueError, "update_freq must be \"epoch\", \"batch\" or a number of batches, got \"",
           w, "\"");
  if (w == "batch") batches = 1;
}

UpdateFreq::UpdateFreq(int64_t every_n_batches) : batches(every_n_batches) {
  LS_CHECK(every_n_batches > 0, ValueError, "update_freq in batches must be > 0, got ", every_n_batches,
           "; use \"epoch\" to write epoch summaries only");
}

namespace {

using Clock = std::chrono::steady_clock;

class TensorBoardCallback : public Callback {
 public:
  explicit TensorBoardCallback(TensorBoardOptions o) : opt_(std::move(o)) {
    LS_CHECK(opt_.histogram_freq >= 0, ValueError, "TensorBoard histogram_freq must be >= 0 (0: no histograms), got ",
             opt_.histogram_freq);
  }

  void on_train_begin(const Logs&) override {
    decide_chief();
    // Each fit starts new event files, as Keras' set_model does.
    close_writers();
    global_train_batch_ = 0;
    if (chief_ && opt_.write_graph) {
      // Keras' keras_model_summary: the model's JSON for TensorBoard's graph plugin, whose settings say version 1.
      const nlohmann::json model_json = {{"class_name", "Sequential"}, {"config", model_->get_config()}};
      summary::write("keras", model_json.dump(), 0, "graph_keras_model", "1", &writer("train"));
    }
  }
  // On every worker: fit returns once the chief's event files are complete, so any worker may read them next.
  void on_train_end(const Logs&) override { detail::write_on_chief(*model_, "", [&] { close_writers(); }); }

  void on_epoch_begin(int64_t, const Logs&) override {
    epoch_start_ = Clock::now();
    epoch_start_iterations_ = iterations();
  }
  void on_train_batch_begin(int64_t, const Logs&) override {
    ++global_train_batch_;
    batch_start_ = Clock::now();
  }
  void on_train_batch_end(int64_t, const Logs& logs) override {
    if (!chief_ || opt_.update_freq.batches == 0 || global_train_batch_ % opt_.update_freq.batches != 0) return;
    summary::SummaryWriter& w = writer("train");
    if (opt_.write_steps_per_second)
      summary::scalar("batch_steps_per_second", 1.0 / seconds_since(batch_start_), global_train_batch_, &w);
    for (const auto& [name, value] : logs.items()) summary::scalar("batch_" + name, value, global_train_batch_, &w);
  }

  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    if (!chief_) return;
    Logs train, val;
    for (const auto& [name, value] : logs.items()) {
      if (name.starts_with("val_")) val.set(name.substr(4), value);
      else train.set(name, value);
    }
    if (const auto optimizer = model_->optimizer()) train.set("learning_rate", optimizer->learning_rate());
    if (opt_.write_steps_per_second)
      train.set("steps_per_second",
                static_cast<double>(iterations() - epoch_start_iterations_) / seconds_since(epoch_start_));
    for (const auto& [name, value] : train.items()) summary::scalar("epoch_" + name, value, epoch, &writer("train"));
    for (const auto& [name, value] : val.items()) summary::scalar("epoch_" + name, value, epoch, &writer("validation"));
    if (opt_.histogram_freq > 0 && epoch % opt_.histogram_freq == 0) {
      summary::SummaryWriter& w = writer("train");
      // Keras 3 names a Sequential model's weights "<model>/<layer>/<weight>"; TensorBoard groups tags by prefix.
      for (const LayerPtr& layer : model_->layers())
        for (const Variable& weight : layer->weights())
          summary::histogram(model_->name() + "/" + weight.name() + "/histogram", weight.value(), epoch, &w);
      w.flush();
    }
  }

  // Also reached from evaluate(), which starts no training: the chief is decided here as well.
  void on_test_begin(const Logs&) override { decide_chief(); }
  void on_test_end(const Logs& logs) override {
    if (!chief_ || !model_->optimizer()) return;
    summary::SummaryWriter& w = writer("validation");
    for (const auto& [name, value] : logs.items())
      summary::scalar("evaluation_" + name + "_vs_iterations", value, iterations(), &w);
    w.flush();  // an evaluate() of its own ends no training, so nothing else would flush it
  }

 private:
  void decide_chief() {
    // The strategy the model was built under decides who writes: the chief alone, as for checkpoints.
    const distribute::Strategy* strategy = make_trackable(*model_)->strategy();
    chief_ = !strategy || strategy->is_chief();
  }
  // Created when first written to, so a fit without validation makes no validation/ folder (Keras).
  summary::SummaryWriter& writer(const std::string& run) {
    auto it = writers_.find(run);
    if (it == writers_.end())
      it = writers_.emplace(run, summary::create_file_writer((std::filesystem::path(opt_.log_dir) / run).string())).first;
    return it->second;
  }
  void close_writers() {
    for (auto& [run, w] : writers_) w.close();
    writers_.clear();
  }
  int64_t iterations() const {
    const auto optimizer = model_->optimizer();
    return optimizer ? optimizer->iterations() : 0;
  }
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  TensorBoardOptions opt_;
  bool chief_ = true;
  std::map<std::string, summary::SummaryWriter> writers_;
  int64_t global_train_batch_ = 0, epoch_start_iterations_ = 0;
  Clock::time_point epoch_start_, batch_start_;
};

}  // namespace

std::shared_ptr<Callback> TensorBoard(TensorBoardOptions options) {
  return std::make_shared<TensorBoardCallback>(std::move(options));
}

}  // namespace lockstep::keras::callbacks
