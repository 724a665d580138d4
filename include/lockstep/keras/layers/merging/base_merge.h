// The base of the merging layers (Keras' Merge): layers called on a list of tensors.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

// What the merging layers share: they take a list of at least two tensors, called as layer({a, b}).
class Merge : public Layer {
 public:
  using Layer::Layer;
  Shape compute_output_shape(const Shape& input_shape) const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
