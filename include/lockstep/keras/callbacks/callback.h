// Keras callbacks' base: hooks into fit/evaluate/predict (on_{train,test,predict}_{begin,end},
// on_epoch_{begin,end}, on_{train,test,predict}_batch_{begin,end}), the logs they receive and the run's parameters.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::keras {

class Model;

// The numbers a training step or epoch reports, in insertion order ("loss", "accuracy", "val_loss", ...).
class Logs {
 public:
  void set(const std::string& key, double value);
  std::optional<double> get(const std::string& key) const;
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<std::pair<std::string, double>> items_;
};

// The parameters of a fit/evaluate run that callbacks read (Keras: callback.params).
struct RunParams {
  int64_t epochs = 1;
  int64_t steps = -1;  // steps per epoch; -1 when unknown until the data runs out
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;
  void set_model(Model* model) { model_ = model; }
  void set_params(const RunParams& params) { params_ = params; }

  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(int64_t /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(int64_t /*epoch*/, const Logs&) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, const Logs&) {}

 protected:
  Model* model_ = nullptr;
  RunParams params_;
};
using CallbackPtr = std::shared_ptr<Callback>;

}  // namespace lockstep::keras
