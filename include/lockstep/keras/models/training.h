// The arguments of Model's training API (Keras' Trainer): compile's optimizer, loss and metrics given by name or
// by object, and fit/evaluate/predict's options with Keras' defaults and the parameter tables Python reads.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/data/dataset.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras {

// An optimizer, loss or metric given by Keras string or by object.
struct OptimizerRef {
  std::shared_ptr<optimizers::Optimizer> ptr;
  OptimizerRef(const char* name) : ptr(optimizers::get(name)) {}
  OptimizerRef(const std::string& name) : ptr(optimizers::get(name)) {}
  template <typename O> OptimizerRef(std::shared_ptr<O> p) : ptr(std::move(p)) {}
};
struct LossRef {
  std::shared_ptr<losses::Loss> ptr;
  LossRef() = default;
  LossRef(const char* name) : ptr(losses::get(name)) {}
  LossRef(const std::string& name) : ptr(losses::get(name)) {}
  template <typename L> LossRef(std::shared_ptr<L> p) : ptr(std::move(p)) {}
};
struct MetricRef {
  std::string name;  // resolved at compile(), when the loss is known ("accuracy" depends on it)
  std::shared_ptr<metrics::Metric> ptr;
  MetricRef(const char* n) : name(n) {}
  MetricRef(std::string n) : name(std::move(n)) {}
  template <typename M> MetricRef(std::shared_ptr<M> p) : ptr(std::move(p)) {}
};

struct CompileOptions {
  OptimizerRef optimizer = "rmsprop";
  LossRef loss;
  std::vector<MetricRef> metrics = {};
};

// Keras' batch size when fit, evaluate or predict is given arrays and no batch_size.
constexpr int64_t kDefaultBatchSize = 32;

// fit()'s validation_data: a dataset of batches as it is, or arrays (samples along axis 0, as many in each;
// sample_weight undefined for weights of 1) that fit batches by validation_batch_size.
struct ValidationData {
  std::optional<data::Dataset> dataset;
  Tensor x, y, sample_weight;
  ValidationData(data::Dataset batches) : dataset(std::move(batches)) {}
  ValidationData(Tensor x, Tensor y, Tensor sample_weight = {})
      : x(std::move(x)), y(std::move(y)), sample_weight(std::move(sample_weight)) {}
};

// Keras' fit() arguments; those marked "fit(x, y) only" are a ValueError with a dataset.
struct FitOptions {
  int64_t epochs = 1;
  int64_t steps_per_epoch = -1;            // -1: until the data runs out
  int64_t batch_size = kDefaultBatchSize;  // for fit(x, y) only
  bool shuffle = true;                     // for fit(x, y) only
  // fit(x, y) only: each sample's weight in the loss and metrics, shape (samples,); undefined: all 1.
  Tensor sample_weight = {};
  // fit(x, y) only: a weight per class, multiplying sample_weight; a sample's class is its label rounded (sparse
  // labels) or its label's argmax (one-hot); classes not listed weigh 1.
  std::map<int64_t, double> class_weight = {};
  // fit(x, y) only: the fraction in [0, 1) of the samples held out as validation_data, the last ones (taken
  // before shuffling, as Keras).
  double validation_split = 0;
  std::optional<ValidationData> validation_data = std::nullopt;
  int64_t validation_steps = -1;
  int64_t validation_batch_size = 0;  // for validation_data's arrays; 0: batch_size
  int64_t validation_freq = 1;        // validate after every validation_freq-th epoch
  std::vector<CallbackPtr> callbacks = {};
  int64_t initial_epoch = 0;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
};

struct EvaluateOptions {
  int64_t steps = -1;
  int64_t batch_size = kDefaultBatchSize;  // for evaluate(x, y) only
  Tensor sample_weight = {};               // for evaluate(x, y) only: as FitOptions' sample_weight
  std::vector<CallbackPtr> callbacks = {};
  int verbose = 1;
};

struct PredictOptions {
  int64_t steps = -1;
  int64_t batch_size = kDefaultBatchSize;  // for predict(x) only
  std::vector<CallbackPtr> callbacks = {};
  int verbose = 0;
};

// Keras' arguments of Model.fit, evaluate and predict, in Keras' order and with Keras' defaults (read from the
// options structs above where Keras has a value; None where the struct's default stands for "not given"). Python's
// Model methods take their signatures from them.
std::vector<Param> fit_params();
std::vector<Param> evaluate_params();
std::vector<Param> predict_params();

}  // namespace lockstep::keras
