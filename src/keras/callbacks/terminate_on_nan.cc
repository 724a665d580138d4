// keras.callbacks.TerminateOnNaN: training stops (or fit raises) at a NaN or infinite loss.
#include "lockstep/keras/callbacks/terminate_on_nan.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "lockstep/core/error.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras::callbacks {

namespace {
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
}  // namespace

std::shared_ptr<Callback> TerminateOnNaN(TerminateOnNaNOptions options) {
  return std::make_shared<TerminateOnNaNCallback>(options);
}

}  // namespace lockstep::keras::callbacks
