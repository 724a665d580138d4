// keras.layers.Conv2D: nn::conv2d over NHWC images, with oneDNN's backward.
#include "lockstep/keras/layers/convolutional/conv2d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;

Conv2D::Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options)
    : Layer(kClassName, options.name), filters_(filters), kernel_size_(kernel_size), opt_(std::move(options)) {
  LS_CHECK(filters > 0 && kernel_size > 0 && opt_.strides > 0, ValueError, "Conv2D needs positive filters, kernel_size and strides, got ",
           filters, ", ", kernel_size, ", ", opt_.strides);
  conv_ = {.stride_h = opt_.strides, .stride_w = opt_.strides, .padding = raw_ops::padding_from_name(opt_.padding)};
  activation_ = activations::get(opt_.activation);  // an unknown name fails here, not at the first call
}

void Conv2D::build(const Shape& s) {
  LS_CHECK(s.rank() == 3, ValueError, "Conv2D \"", name(), "\" expects inputs of shape (batch, height, width, channels), got ",
           detail::with_none(s));
  kernel_ = add_weight("kernel", {kernel_size_, kernel_size_, s[2], filters_}, opt_.kernel_initializer, true,
                       opt_.kernel_regularizer);
  if (opt_.use_bias) bias_ = add_weight("bias", {filters_}, opt_.bias_initializer);
}

Shape Conv2D::compute_output_shape(const Shape& s) const {
  auto out = [&](int64_t in) {
    return conv_.padding == Padding::same ? (in + opt_.strides - 1) / opt_.strides : (in - kernel_size_) / opt_.strides + 1;
  };
  return Shape{out(s[0]), out(s[1]), filters_};
}

Tensor Conv2D::call(const Tensor& x, bool) {
  return activation_(nn::conv2d(x, autocast(kernel_), opt_.use_bias ? autocast(bias_) : Tensor(), conv_));
}

nlohmann::json Conv2D::get_config() const {
  return detail::conv_config(Layer::get_config(), 2, filters_, kernel_size_, opt_);
}

std::vector<Param> Conv2D::params() {
  return detail::conv_params(2, "the window's side (n or [n, n]: lockstep's windows are square)",
                             "\"valid\" (no padding) or \"same\" (the output keeps the input's size)");
}

std::shared_ptr<Conv2D> Conv2D::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Conv2D>(
      detail::json_int(c.at("filters"), "filters"), r.window("kernel_size"),
      Conv2DOptions{.strides = r.window("strides"),
                    .padding = c.value("padding", "valid"),
                    .activation = r.activation(),
                    .use_bias = c.value("use_bias", true),
                    .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                    .bias_initializer = r.initializer("bias_initializer", "zeros"),
                    .kernel_regularizer = r.regularizer("kernel_regularizer"),
                    .name = r.name()});
}

}  // namespace lockstep::keras::layers
