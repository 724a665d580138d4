// keras.layers.Add: the elementwise sum of a list of tensors.
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/merging/base_merge.h"

namespace lockstep::keras::layers {

// The elementwise sum of inputs of one shape.
class Add : public Merge {
 public:
  static constexpr const char* kClassName = "Add";
  static std::shared_ptr<Add> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Add(std::string name = "") : Merge(kClassName, std::move(name)) {}
  LayerPtr clone() const override { return std::make_shared<Add>(*this); }
  Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const override;

 protected:
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;
};

}  // namespace lockstep::keras::layers
