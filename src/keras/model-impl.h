// The state behind a Sequential handle, shared by model.cc and training.cc.
#pragma once
#include <mutex>

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
};

}  // namespace lockstep::keras
