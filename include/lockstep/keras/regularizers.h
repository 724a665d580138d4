// Weight regularizers (keras.regularizers): penalties whose values appear in model.losses().
#pragma once
#include <memory>

#include <nlohmann/json.hpp>

#include "lockstep/keras/registry.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::regularizers {

class Regularizer {
 public:
  virtual ~Regularizer() = default;
  // The penalty for weight w: a differentiable scalar.
  virtual Tensor operator()(const Tensor& w) const = 0;
  virtual nlohmann::json get_config() const = 0;
};
using RegularizerPtr = std::shared_ptr<const Regularizer>;

// l1 * sum(|w|) + l2 * sum(w^2).
RegularizerPtr L1L2(double l1 = 0.0, double l2 = 0.0);
RegularizerPtr L1(double l1 = 0.01);
RegularizerPtr L2(double l2 = 0.01);
// Every regularizer lockstep has, by Keras class name, with Keras' short names ("l1", "l2", "l1_l2").
const Registry<RegularizerPtr>& registry();
// {"class_name": "L2", "config": {"l2": ...}} and the like, or a short name (factors of 0.01, as Keras' l1(),
// l2(), l1_l2()); null gives no regularizer.
RegularizerPtr from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::regularizers
