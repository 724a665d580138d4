// Helpers shared inside the keras layer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "lockstep/core/shape.h"

namespace lockstep::keras::detail {

// "Conv2D" -> "conv2d", then "conv2d_1", ...: Keras' default names, unique per process until clear_session().
std::string unique_name(const std::string& class_name);

// "(None, 26, 26, 32)": a feature shape with the batch dimension shown as Keras shows it.
std::string with_none(const Shape& features);

// While a saved model is rebuilt from its config: the bytes its weights file holds, which the weights
// add_weight creates may not exceed. A damaged config asking for terabytes is refused before any of it is
// allocated. Set for the duration of a scope by WeightBudget.
extern thread_local std::optional<uint64_t> weight_budget;
struct WeightBudget {
  explicit WeightBudget(uint64_t bytes) { weight_budget = bytes; }
  ~WeightBudget() { weight_budget.reset(); }
  WeightBudget(const WeightBudget&) = delete;
  WeightBudget& operator=(const WeightBudget&) = delete;
};

}  // namespace lockstep::keras::detail
