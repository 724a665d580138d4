// The state behind a Model handle (Sequential or functional), shared by model.cc, sequential.cc, functional.cc and
// training.cc (and saving/checkpointing.cc).
#pragma once
#include <mutex>
#include <optional>

#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/models/model.h"

namespace lockstep::keras {

// A functional model's graph, fixed at construction.
struct Graph {
  using NodePtr = std::shared_ptr<const detail::Node>;
  std::vector<NodePtr> inputs, outputs;
  std::vector<std::shared_ptr<layers::InputLayer>> input_layers;  // one per input
  std::vector<NodePtr> order;                                     // every node, each after its inputs
  std::vector<Shape> layer_output_shapes;                         // of each layer's first node, for summary()
};

struct Model::State {
  std::string name;
  std::shared_ptr<layers::InputLayer> input;  // Sequential only
  std::vector<LayerPtr> layers;
  std::optional<Graph> graph;  // set for a functional model
  bool built = false;
  std::mutex build_mutex;
  Shape input_shape, output_shape;

  // Set by compile().
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::shared_ptr<losses::Loss> loss;
  std::vector<std::shared_ptr<metrics::Metric>> metrics;
  // The epoch's mean loss, weighted by batch size as Keras' loss tracker is.
  double loss_total = 0, loss_count = 0;
  bool stop_training = false;
  // The strategy whose scope the model was built in (null: none); it runs fit and evaluate.
  distribute::Strategy* strategy = nullptr;
  // True when steps run on several replicas or workers.
  bool distributed() const;

  // While fit() runs: where it is, which fit_state() saves.
  struct FitProgress {
    int64_t epoch = 0;        // the epoch running, or the last one finished when epoch_done
    int64_t steps_done = 0;   // steps finished in that epoch
    bool epoch_done = false;  // set before the on_epoch_end callbacks run
    int64_t total_steps = 0;  // steps of this fit() so far, across epochs and restarts
    std::function<nlohmann::json()> input_position;
    nlohmann::json finished = nlohmann::json::array();  // [{"epoch": e, "logs": {...}}] for History
  };
  std::optional<FitProgress> fit;
  // A saved FitProgress (with the metric accumulators) restored before fit's first step: fit continues there.
  std::optional<nlohmann::json> resume;
};

// functional.cc: a functional model's forward pass, its Keras config, and the model a config describes.
std::vector<Tensor> run_graph(Model::State& s, const std::vector<Tensor>& xs, CallOptions options);
nlohmann::json functional_config(const Model::State& s);
Model functional_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras
