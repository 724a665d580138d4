// Helpers the loss base and the losses share, and the pieces of the losses' parameter tables and factories.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/autograd/ops.h"
#include "lockstep/keras/losses/loss.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::losses::detail {

inline Tensor as_dtype(const Tensor& x, DType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}

inline Shape without_last_axis(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 1));
}

// A loss's Options from its complete config: from_logits and label_smoothing where it has them, the reduction and
// the name.
template <typename Options>
Options options_from(const nlohmann::json& c) {
  Options o;
  if constexpr (requires { o.from_logits; }) o.from_logits = c.at("from_logits").get<bool>();
  if constexpr (requires { o.label_smoothing; }) o.label_smoothing = c.at("label_smoothing").get<double>();
  const std::string reduction = c.at("reduction");
  for (Reduction r : {Reduction::NONE, Reduction::SUM, Reduction::SUM_OVER_BATCH_SIZE})
    if (reduction_name(r) == reduction) o.reduction = r;
  o.name = c.at("name");
  return o;
}

// The arguments the loss classes share, each with its default from the loss's options struct where it has it.
inline Param from_logits_param(bool d) { return {"from_logits", d, "y_pred holds logits, not probabilities"}; }
inline Param label_smoothing_param(double d) {
  return {"label_smoothing", d, "moves the labels towards 1/classes by this much"};
}
inline Param reduction_param(Reduction d) {
  return {"reduction", reduction_name(d), "how the per-example losses become one: sum_over_batch_size, sum, none",
          {"sum_over_batch_size", "sum", "none", "auto"}};
}
inline Param name_param(const std::string& d) { return {"name", d, "the loss's name"}; }
inline Param dtype_param() { return Param::fixed("dtype", nullptr, "lockstep's losses compute in float32", {"float32"}); }
inline Param last_axis_param() { return Param::fixed("axis", -1, "lockstep's losses reduce the last axis"); }

// The table of a loss whose only arguments are the ones every loss takes (MeanSquaredError's).
template <typename Options>
std::vector<Param> reduction_params() {
  const Options d;
  return {reduction_param(d.reduction), name_param(d.name), dtype_param()};
}

}  // namespace lockstep::keras::losses::detail
