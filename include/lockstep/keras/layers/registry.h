// The layer registry: every layer class by Keras class name, and layers read from and written to Keras 3's
// serialised form through it.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::layers {

// Each layer class has kClassName, its Keras class name, params(), its Keras arguments with Keras' defaults, and
// from_config(config), the layer a complete config (every argument of params() present) describes (Keras'
// cls.from_config). registry() lists the classes; layers::from_config (at the end) reads a serialised layer through
// it and adds what every layer shares (base_params(): trainable, the dtype policy).

// The keyword arguments of every layer (keras.layers.Layer.__init__).
std::vector<Param> base_params();

// Every layer class lockstep has, by Keras class name.
const Registry<LayerPtr>& registry();
// Makes a layer from its {"class_name", "config"} (Sequential.from_config uses it). A layer class or option
// lockstep does not have (Conv2D's dilation_rate, channels_first, a constraint...) is a ValueError naming both.
LayerPtr from_config(const nlohmann::json& config);
// Keras 3's serialised layer: {"module", "class_name", "config", "registered_name"}, with "build_config" when
// `input_shape` (without batch) is given.
nlohmann::json serialize(const Layer& layer, const Shape* input_shape = nullptr);

}  // namespace lockstep::keras::layers
