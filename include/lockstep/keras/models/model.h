// keras.Model (Keras' functional API: a graph of layers from symbolic inputs to outputs), with Keras' model API —
// call, summary, weights, configs, save and load, and compile/fit/evaluate/predict (their options in
// models/training.h). A model is a handle: copies share one model.
#pragma once
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/data/dataset.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/models/training.h"
#include "lockstep/train/trackable.h"

namespace lockstep::distribute {
class DistributedDataset;
}

namespace lockstep::keras {

// Keras' model.save(include_optimizer=...).
struct SaveOptions {
  // Also save the compile config (optimizer, loss, metrics) and the optimizer's state (iterations, slots).
  bool include_optimizer = true;
};
// Keras' load_model(compile=...).
struct LoadOptions {
  // Compile the model from the saved compile config (when there is one) and restore the optimizer's state.
  bool compile = true;
};

class Model;
// A model in a checkpoint (tf.train.Checkpoint(model=...)): its variables in order, Dropout's random streams,
// and its input shape, so that restoring into a model that is not built yet builds it first.
train::TrackablePtr make_trackable(const Model& model);

// A model's inputs or outputs: one symbolic tensor (or keras::Input) or a list {a, b}.
struct KerasTensors {
  std::vector<KerasTensor> tensors;
  KerasTensors(KerasTensor t) : tensors{std::move(t)} {}
  KerasTensors(const layers::InputLayer& input) : tensors{KerasTensor(input)} {}
  KerasTensors(std::initializer_list<KerasTensor> ts) : tensors(ts) {}
  KerasTensors(std::vector<KerasTensor> ts) : tensors(std::move(ts)) {}
};

// keras.Model. Built with the functional API:
//   auto inputs = keras::Input({28, 28});
//   auto x = layers::Flatten()(inputs);
//   auto outputs = layers::Dense(10)(layers::Dense(64, {.activation = "relu"})(x));
//   keras::Model model(inputs, outputs);
// Layers run in topological order; variables and layers() are in Keras' order (by depth from the inputs). fit,
// evaluate and predict take models of one input and one output; call a model of several with a list.
class Model {
 public:
  // The graph from `inputs` (keras::Input) to `outputs` that layers recorded when called on symbolic
  // tensors; every layer is built. ValueError when an output does not depend on the inputs alone, or two
  // layers share a name.
  Model(KerasTensors inputs, KerasTensors outputs, std::string name = "");

  // One input and one output.
  Tensor operator()(const Tensor& x, CallOptions options = {});
  // Inputs in the order of the model's inputs; outputs in the order of its outputs.
  std::vector<Tensor> operator()(const std::vector<Tensor>& xs, CallOptions options = {});
  const std::string& name() const;
  // Sequential: its layers without the Input; functional: every layer, InputLayers included (as Keras).
  const std::vector<LayerPtr>& layers() const;
  // The layer called `name`; ValueError when there is none.
  LayerPtr get_layer(const std::string& name) const;
  // Its layers' random streams (Layer::random_streams), each once, in layer order: what a checkpoint of the model
  // saves per worker.
  std::vector<distribute::ReplicaRandomPtr> random_streams() const;
  bool built() const;
  // Keras' model.input_shape and the input's dtype, for a built model of one input (the shape without the batch
  // axis). ValueError when the model is not built yet or has several inputs.
  Shape input_shape() const;
  DType input_dtype() const;
  // Builds every layer for inputs of `input_shape` (without batch); done at construction when the first
  // layer is an Input. A functional model is built from the start.
  void build(const Shape& input_shape);

  // Keras' summary table: layer names and types, output shapes, parameter counts and totals.
  std::string summary_string() const;
  void summary() const;
  int64_t count_params() const;

  std::vector<Variable> variables() const;
  std::vector<Variable> trainable_variables() const;
  std::vector<Variable> non_trainable_variables() const;
  // Regularization losses of every layer, computed now.
  std::vector<Tensor> losses() const;
  std::vector<Tensor> get_weights() const;
  // Copies values into the variables in order; count, shapes and dtypes must match.
  void set_weights(const std::vector<Tensor>& weights);

  // Keras 3's config: Sequential's, or Functional's ({"name", "trainable", "layers" with their
  // "inbound_nodes", "input_layers", "output_layers"}).
  nlohmann::json get_config() const;
  // A functional or Sequential model from get_config()'s config (or Keras'); unsupported layers and options
  // are a ValueError naming them.
  static Model from_config(const nlohmann::json& config);
  // keras' model.to_json(): {"module", "class_name": "Functional" | "Sequential", "config", ...}.
  std::string to_json() const;
  // Weights in a safetensors file, keyed by variable name ("dense/kernel"), loaded back by order with
  // shapes checked; a path ending in ".weights.h5" is Keras 3's weights file instead (with the optimizer's
  // variables once compiled), which Keras' load_weights reads. Under a multi-worker strategy, as save().
  void save_weights(const std::string& path) const;
  void load_weights(const std::string& path);
  // A directory with config.json (the model's config and, once compiled, Keras 3's compile_config),
  // model.weights.safetensors and optimizer.safetensors (iterations and slots, as Optimizer::state() gives
  // them; left out with include_optimizer = false), swapped in whole; missing parent directories are created.
  // Under a multi-worker strategy it is a collective, as TF's: every worker calls it (with its own path, as the
  // tutorials do), the chief alone writes its `dir`, and every worker returns only once the chief's files are
  // durable (with the chief's error if it failed), so any worker may load them next. A path ending in ".keras"
  // is written as Keras 3's archive instead (lockstep/keras/saving.h), which TensorFlow's keras.models.load_model reads.
  void save(const std::string& dir, SaveOptions options = {}) const;
  // Rebuilds a model saved by save(): created in the current strategy's scope when there is one (its
  // variables mirrored by that strategy, whatever strategy and number of workers saved it), compiled from
  // the compile config and its optimizer's state restored, so fit() continues. Under a multi-worker strategy
  // every worker calls it; the chief reads `dir` and broadcasts it, so the others need no copy. NotFoundError
  // for a missing model, DataLossError for a corrupted file. A ".keras" path is read as Keras 3's archive.
  static Model load_model(const std::string& dir, LoadOptions options = {});

  void compile(CompileOptions options);
  callbacks::History fit(const data::Dataset& dataset, FitOptions options = {});
  // Arrays of samples along axis 0, as many in each (x, y and options.sample_weight): class_weight and
  // validation_split applied as Keras does, then batched (and shuffled) as a dataset. ValueError, naming the array,
  // for an empty or mismatched one, and Keras' own message when validation_split leaves no sample on one side.
  callbacks::History fit(const Tensor& x, const Tensor& y, FitOptions options = {});
  // On experimental_distribute_dataset's result, as TF accepts it: trains on the dataset it split, as
  // fit(dataset) would. ValueError when it comes from another strategy than the model's.
  callbacks::History fit(const distribute::DistributedDataset& dataset, FitOptions options = {});
  // Returns "loss" and each metric by name.
  std::map<std::string, double> evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  std::map<std::string, double> evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options = {});
  Tensor predict(const data::Dataset& dataset, PredictOptions options = {});
  Tensor predict(const Tensor& x, PredictOptions options = {});
  // One gradient step on one batch; returns that batch's loss (and metrics, which accumulate until reset).
  // class_weight as FitOptions'.
  std::map<std::string, double> train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight = {},
                                               const std::map<int64_t, double>& class_weight = {});
  std::map<std::string, double> test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight = {});

  // Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit() after the current batch.
  void set_stop_training(bool stop);
  bool stop_training() const;
  std::shared_ptr<optimizers::Optimizer> optimizer() const;
  std::shared_ptr<losses::Loss> loss() const;
  const std::vector<std::shared_ptr<metrics::Metric>>& metrics() const;

  // fit()'s position as a checkpoint object, for callbacks that back up and resume training
  // (BackupAndRestore): the epoch and the steps done in it, the input's position, the epoch's metric
  // accumulators and the logs of finished epochs. Restored before fit's first step (in on_train_begin), it
  // makes fit() continue exactly there. It differs per worker (each reads its own shard).
  train::TrackablePtr fit_state() const;

  // The model's state, defined in src/keras/models/models-impl.h.
  struct State;

 protected:
  explicit Model(std::shared_ptr<State> state) : s_(std::move(state)) {}
  std::shared_ptr<State> s_;

 private:
  friend class Sequential;
  friend train::TrackablePtr make_trackable(const Model& model);
  Logs metric_logs() const;
  void reset_metrics();
  // What a replica's step returns to the caller's thread.
  struct ReplicaOutputRef {
    double loss;
    double examples;
    Tensor y, y_pred, sample_weight;
  };
  class StepInput;
  // One step: each batch on its replica (training or not), then the loss tracker and metrics updated.
  std::vector<ReplicaOutputRef> run_step(const std::vector<data::Batch>& batches, bool training);
  void record_outputs(const std::vector<ReplicaOutputRef>& outputs);
  // Runs the test loop over `dataset` with prepared callbacks and returns the logs (fit's validation uses it).
  Logs run_evaluation(const data::Dataset& dataset, int64_t steps, const std::vector<CallbackPtr>& callbacks);
};

namespace models {
// keras.models.model_from_json: a model (Functional or Sequential) from model.to_json()'s text, built, with
// fresh weights.
Model model_from_json(const std::string& json);
}  // namespace models

}  // namespace lockstep::keras
