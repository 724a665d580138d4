// keras.layers.InputLayer and keras.Input: a model's input, its feature shape and dtype.
#pragma once
#include <memory>
#include <vector>

#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras {
namespace layers {

// The model's input: its feature shape (without batch) and dtype. keras.Input(shape) makes one.
class InputLayer : public Layer {
 public:
  static constexpr const char* kClassName = "InputLayer";
  static std::shared_ptr<InputLayer> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<InputLayer>(*this); }
  explicit InputLayer(Shape shape, DType dtype = DType::float32, std::string name = "");
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  friend class lockstep::keras::KerasTensor;
  Shape shape_;
  DType dtype_;
  std::shared_ptr<const detail::Node> node_;  // the symbolic tensor it stands for; copies share it
};

}  // namespace layers

// keras.Input: the input of a model, for features of `shape` (without batch): the first layer of a Sequential,
// or a symbolic tensor (it converts to KerasTensor) that layers are called on for a functional Model.
inline layers::InputLayer Input(Shape shape, DType dtype = DType::float32) { return layers::InputLayer(std::move(shape), dtype); }

}  // namespace lockstep::keras
