// Helpers shared inside the keras layer.
#pragma once
#include <string>

#include "lockstep/core/shape.h"

namespace lockstep::keras::detail {

// "Conv2D" -> "conv2d", then "conv2d_1", ...: Keras' default names, unique per process until clear_session().
std::string unique_name(const std::string& class_name);

// "(None, 26, 26, 32)": a feature shape with the batch dimension shown as Keras shows it.
std::string with_none(const Shape& features);

}  // namespace lockstep::keras::detail
