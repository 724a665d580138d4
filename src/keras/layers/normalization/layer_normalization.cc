// keras.layers.LayerNormalization: each example normalised over its last axis, in float32 for bfloat16 inputs.
#include "lockstep/keras/layers/normalization/layer_normalization.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::check_supported;

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer(kClassName, options.name), opt_(std::move(options)) {
  LS_CHECK(opt_.epsilon > 0, ValueError, "LayerNormalization needs epsilon > 0, got ", opt_.epsilon);
}

void LayerNormalization::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "LayerNormalization \"", name(), "\" needs inputs of rank >= 2");
  check_supported(opt_.axis == -1 || opt_.axis == s.rank(), kClassName, name(), "axis=" + std::to_string(opt_.axis),
                  "only the last axis (-1) is");
  const Shape c{s[-1]};
  if (opt_.scale) gamma_ = add_weight("gamma", c, opt_.gamma_initializer);  // Keras makes gamma first
  if (opt_.center) beta_ = add_weight("beta", c, opt_.beta_initializer);
}

Tensor LayerNormalization::call(const Tensor& x_in, bool) {
  // As Keras does, bfloat16 inputs are normalised in float32 and only the result is rounded.
  const Tensor x = x_in.dtype() == DType::bfloat16 ? cast(x_in, DType::float32) : x_in;
  const Tensor mean = reduce_mean(x, {-1}, true);
  const Tensor centered = x - mean;
  Tensor y = centered * rsqrt(reduce_mean(square(centered), {-1}, true) + opt_.epsilon);
  if (opt_.scale) y = y * gamma_;
  if (opt_.center) y = y + beta_;
  return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
}

nlohmann::json LayerNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = built() ? nlohmann::json::array({opt_.axis}) : nlohmann::json(opt_.axis);  // Keras' list once built
  c["epsilon"] = opt_.epsilon;
  c["center"] = opt_.center;
  c["scale"] = opt_.scale;
  c["rms_scaling"] = false;
  c["beta_initializer"] = opt_.beta_initializer.ptr->get_config();
  c["gamma_initializer"] = opt_.gamma_initializer.ptr->get_config();
  for (const char* k : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) c[k] = nullptr;
  return c;
}

std::vector<Param> LayerNormalization::params() {
  using detail::operator+;
  return std::vector<Param>{{"axis", -1, "the axis normalised: lockstep normalises the last (-1)"},
                            {"epsilon", 0.001, "added to the variance"},
                            {"center", true, "whether to add beta"},
                            {"scale", true, "whether to multiply by gamma"},
                            {"beta_initializer", "zeros", "beta's initial values"},
                            {"gamma_initializer", "ones", "gamma's initial values"}} +
         detail::plain_kernel({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
}

std::shared_ptr<LayerNormalization> LayerNormalization::from_config(const nlohmann::json& c) {
  const std::string name = c.value("name", "");
  check_supported(!c.value("rms_scaling", false), kClassName, name, "rms_scaling=true",
                  "lockstep does not implement it");
  nlohmann::json axis = c.value("axis", nlohmann::json(-1));
  if (axis.is_array() && axis.size() == 1) axis = axis[0];
  check_supported(axis.is_number_integer() && axis.get<int64_t>() == -1, kClassName, name, "axis=" + axis.dump(),
                  "only the last axis (-1) is");
  LayerNormalizationOptions o{.epsilon = c.value("epsilon", 1e-3),
                              .center = c.value("center", true),
                              .scale = c.value("scale", true),
                              .name = name};
  if (c.contains("beta_initializer")) o.beta_initializer = initializers::from_config(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = initializers::from_config(c["gamma_initializer"]);
  return std::make_shared<LayerNormalization>(o);
}

}  // namespace lockstep::keras::layers
