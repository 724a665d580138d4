// keras.callbacks.LearningRateScheduler: the optimizer's learning rate set at each epoch's start by a function.
#include "lockstep/keras/callbacks/learning_rate_scheduler.h"

#include <cmath>
#include <cstdio>

#include "lockstep/core/error.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::callbacks {

namespace {
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
}  // namespace

std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int64_t, double)> schedule, int verbose) {
  return std::make_shared<LearningRateSchedulerCallback>(std::move(schedule), verbose);
}

}  // namespace lockstep::keras::callbacks
