// The state behind a Sequential handle, shared by model.cc and training.cc.
#pragma once
#include <mutex>
#include <optional>

#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"

namespace lockstep::keras {

struct Sequential::State {
  std::string name;
  std::shared_ptr<layers::InputLayer> input;
  std::vector<LayerPtr> layers;
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

}  // namespace lockstep::keras
