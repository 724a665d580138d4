// keras.layers.Dense: activation(x @ kernel + bias) over the last axis.
#include "lockstep/keras/layers/core/dense.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;
using detail::plain_kernel;
using detail::operator+;

Dense::Dense(int64_t units, DenseOptions options)
    : Layer(kClassName, options.name), units_(units), opt_(std::move(options)) {
  LS_CHECK(units > 0, ValueError, "Dense needs a positive number of units, got ", units);
  activation_ = activations::get(opt_.activation);
}

void Dense::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "Dense \"", name(), "\" needs inputs of rank >= 2 (batch, features)");
  kernel_ = add_weight("kernel", {s[-1], units_}, opt_.kernel_initializer, true, opt_.kernel_regularizer);
  if (opt_.use_bias) bias_ = add_weight("bias", {units_}, opt_.bias_initializer);
}

Shape Dense::compute_output_shape(const Shape& s) const {
  std::vector<int64_t> dims = s.dims();
  dims.back() = units_;
  return Shape(dims);
}

Tensor Dense::call(const Tensor& x, bool) {
  const Tensor kernel = autocast(kernel_);
  Tensor y;
  if (x.rank() == 2) {
    y = matmul(x, kernel);
  } else {  // applied over the last axis, as Keras does for rank > 2
    std::vector<int64_t> dims = x.shape().dims();
    y = matmul(reshape(x, {-1, dims.back()}), kernel);
    dims.back() = units_;
    y = reshape(y, Shape(dims));
  }
  if (opt_.use_bias) y = y + autocast(bias_);
  return activation_(y);
}

nlohmann::json Dense::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = opt_.activation.empty() ? "linear" : opt_.activation;
  c["use_bias"] = opt_.use_bias;
  c["kernel_initializer"] = opt_.kernel_initializer.ptr->get_config();
  c["bias_initializer"] = opt_.bias_initializer.ptr->get_config();
  c["kernel_regularizer"] = opt_.kernel_regularizer ? opt_.kernel_regularizer->get_config() : nlohmann::json();
  for (const char* none : {"bias_regularizer", "kernel_constraint", "bias_constraint", "quantization_config"})
    c[none] = nullptr;
  return c;
}

std::vector<Param> Dense::params() {
  return std::vector<Param>{{"units", kRequired, "the width of the output"},
                            {"activation", nullptr, "applied to the output; None is linear"},
                            {"use_bias", true, "whether to add a bias vector"},
                            {"kernel_initializer", "glorot_uniform", "the kernel's initial values"},
                            {"bias_initializer", "zeros", "the bias's initial values"},
                            {"kernel_regularizer", nullptr, "a penalty on the kernel, added to the loss"}} +
         plain_kernel({"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint", "lora_rank",
                       "lora_alpha", "quantization_config"});
}

std::shared_ptr<Dense> Dense::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Dense>(
      detail::json_int(c.at("units"), "units"),
      DenseOptions{.activation = r.activation(),
                   .use_bias = c.value("use_bias", true),
                   .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                   .bias_initializer = r.initializer("bias_initializer", "zeros"),
                   .kernel_regularizer = r.regularizer("kernel_regularizer"),
                   .name = r.name()});
}

}  // namespace lockstep::keras::layers
