// keras.callbacks.ProgbarLogger: Keras' progress bar.
#pragma once
#include <chrono>
#include <cstdio>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// Keras' progress bar: "Epoch 1/3" then "70/70 [==============================] - 1s 14ms/step - loss: 2.2653
// - accuracy: 0.1921", redrawn in place on a terminal, one line per epoch otherwise.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(std::FILE* out = stdout);
  void on_train_begin(const Logs&) override;
  void on_epoch_begin(int64_t epoch, const Logs&) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int64_t epoch, const Logs& logs) override;
  void on_test_begin(const Logs&) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs&) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void start(int64_t target);
  void update(int64_t seen, const Logs& logs, bool finalize);
  std::FILE* out_;
  bool interactive_;
  bool in_fit_ = false;
  int64_t target_ = -1, seen_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace lockstep::keras::callbacks
