// The state behind a Sequential handle, shared by model.cc and training.cc.
#pragma once
#include "lockstep/keras/model.h"

namespace lockstep::keras {

struct Sequential::State {
  std::string name;
  std::shared_ptr<layers::InputLayer> input;
  std::vector<LayerPtr> layers;
  bool built = false;
  Shape input_shape, output_shape;

  // Set by compile().
  std::shared_ptr<optimizers::Optimizer> optimizer;
  std::shared_ptr<losses::Loss> loss;
  std::vector<std::shared_ptr<metrics::Metric>> metrics;
  // The epoch's mean loss, weighted by batch size as Keras' loss tracker is.
  double loss_total = 0, loss_count = 0;
  bool stop_training = false;
};

}  // namespace lockstep::keras
