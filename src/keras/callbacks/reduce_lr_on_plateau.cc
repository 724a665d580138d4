// keras.callbacks.ReduceLROnPlateau: the learning rate multiplied by `factor` once the monitored log stalls.
#include "lockstep/keras/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <cstdio>

#include "callbacks-impl.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::callbacks {

namespace {
using detail::Monitor;

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
}  // namespace

std::shared_ptr<Callback> ReduceLROnPlateau(ReduceLROnPlateauOptions options) {
  return std::make_shared<ReduceLROnPlateauCallback>(std::move(options));
}

}  // namespace lockstep::keras::callbacks
