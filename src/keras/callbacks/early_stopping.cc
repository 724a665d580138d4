// keras.callbacks.EarlyStopping: training stops once the monitored log has not improved for `patience` epochs.
#include "lockstep/keras/callbacks/early_stopping.h"

#include <cstdio>
#include <vector>

#include "callbacks-impl.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::callbacks {

namespace {
using detail::Monitor;

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
}  // namespace

std::shared_ptr<Callback> EarlyStopping(EarlyStoppingOptions options) {
  return std::make_shared<EarlyStoppingCallback>(std::move(options));
}

}  // namespace lockstep::keras::callbacks
