// keras.layers.InputLayer: a model's input, checked against its shape.
#include "lockstep/keras/layers/core/input_layer.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;
using detail::without_batch;

InputLayer::InputLayer(Shape shape, DType dtype, std::string name)
    : Layer(kClassName, std::move(name)),
      shape_(std::move(shape)),
      dtype_(dtype),
      node_(std::make_shared<detail::Node>(detail::Node{.layer = nullptr,
                                                        .inputs = {},
                                                        .list_input = false,
                                                        .training = std::nullopt,
                                                        .shape = shape_,
                                                        .dtype = dtype_,
                                                        .input_name = this->name()})) {}

Tensor InputLayer::call(const Tensor& x, bool) {
  LS_CHECK(without_batch(x.shape()) == shape_, ValueError, "Input 0 of layer \"", name(),
           "\" is incompatible with the layer: expected shape=", detail::with_none(shape_), ", found shape=", x.shape().str());
  return x;
}

nlohmann::json InputLayer::get_config() const {
  std::vector<nlohmann::json> shape{nullptr};
  for (int64_t d : shape_.dims()) shape.push_back(d);
  return {{"name", name()}, {"batch_shape", shape}, {"dtype", std::string(dtype_name(dtype_))},
          {"sparse", false}, {"ragged", false}, {"optional", false}};
}

std::vector<Param> InputLayer::params() {
  return {{"shape", nullptr, "the feature shape, without the batch axis (or batch_shape)"},
          {"batch_size", nullptr, "the batch size, when fixed"},
          {"dtype", nullptr, "the input's dtype (float32)"},
          Param::fixed("sparse", nullptr, "lockstep's inputs are dense", {false}),
          Param::fixed("ragged", nullptr, "lockstep's inputs are not ragged", {false}),
          {"batch_shape", nullptr, "the shape with the batch axis first"},
          Param::fixed("input_tensor", nullptr, "lockstep makes its own input tensor"),
          Param::fixed("optional", false, "lockstep's inputs are always given"),
          {"name", nullptr, "the layer's name"}};
}

std::shared_ptr<InputLayer> InputLayer::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  // Keras 2 wrote batch_input_shape, Keras 3 writes batch_shape; a program may give shape (and batch_size).
  nlohmann::json batch_shape = c.contains("batch_input_shape") ? c["batch_input_shape"] : c.value("batch_shape", nlohmann::json());
  if (batch_shape.is_null() && c.contains("shape") && c["shape"].is_array()) {
    batch_shape = nlohmann::json::array({c.value("batch_size", nlohmann::json())});
    for (const nlohmann::json& d : c["shape"]) batch_shape.push_back(d);
  }
  LS_CHECK(batch_shape.is_array(), ValueError, "InputLayer '", r.name(), "': give its shape (or batch_shape)");
  std::vector<int64_t> shape;
  for (size_t i = 1; i < batch_shape.size(); ++i) shape.push_back(detail::json_int(batch_shape[i], "batch_shape"));
  return std::make_shared<InputLayer>(Shape(shape), dtype_from_name(c.value("dtype", "float32")), r.name());
}

}  // namespace lockstep::keras::layers
