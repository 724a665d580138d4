// keras.layers.Concatenate: a list of tensors joined along one axis.
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/merging/base_merge.h"

namespace lockstep::keras::layers {

// Joins inputs along `axis` (counted with the batch axis, as in Keras; -1 = the last); the other axes must match.
class Concatenate : public Merge {
 public:
  static constexpr const char* kClassName = "Concatenate";
  static std::shared_ptr<Concatenate> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Concatenate(int64_t axis = -1, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<Concatenate>(*this); }
  Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;

 private:
  int64_t axis_;
};

}  // namespace lockstep::keras::layers
