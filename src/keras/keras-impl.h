// Helpers shared inside the keras layer.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/core/shape.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/registry.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {
class Layer;
}
namespace lockstep::keras::detail {

// "Conv2D" -> "conv2d", then "conv2d_1", ...: Keras' default names, unique per process until clear_session().
std::string unique_name(const std::string& class_name);

// Keras' naming.to_snake_case: "MaxPooling2D" -> "max_pooling2d".
std::string to_snake_case(const std::string& class_name);

// "(None, 26, 26, 32)": a feature shape with the batch dimension shown as Keras shows it.
std::string with_none(const Shape& features);

// A config's integer (units, a size, a seed): nlohmann's get<int64_t>() would also take a float and convert
// 1e30 with undefined behaviour. Throws ValueError naming `key` for anything but a JSON integer.
int64_t json_int(const nlohmann::json& j, const std::string& key);
// A config's list of integers (a shape): ValueError unless an array of JSON integers.
std::vector<int64_t> json_ints(const nlohmann::json& j, const std::string& key);

// While one is alive on this thread, layers refuse to create weights with more elements in all than it allows
// (DataLossError): load_model's config cannot need more parameters than its weights file has bytes, so a
// corrupt size fails before anything is allocated.
class WeightBudget {
 public:
  explicit WeightBudget(int64_t max_elements);
  ~WeightBudget();
  WeightBudget(const WeightBudget&) = delete;
  WeightBudget& operator=(const WeightBudget&) = delete;

 private:
  int64_t left_;
  int64_t* outer_;
};

}  // namespace lockstep::keras::detail
