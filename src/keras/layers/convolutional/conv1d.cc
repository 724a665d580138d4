// keras.layers.Conv1D: the sequence (batch, steps, channels) seen as an image of height 1 and convolved by
// nn::conv2d, whose backward (and reshape's) gives the gradients; "causal" pads the front with zeros first.
#include "lockstep/keras/layers/convolutional/conv1d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

namespace {

// A size given as n or [n] (Keras' 1-tuple).
int64_t one_size(const nlohmann::json& c, const char* key) {
  const nlohmann::json& v = c.at(key);
  if (!v.is_array()) return detail::json_int(v, key);
  LS_CHECK(v.size() == 1, ValueError, "layer '", c.value("name", ""), "' (Conv1D): ", key, "=", v.dump().substr(0, 60),
           " must be one integer or a list of one");
  return detail::json_int(v[0], key);
}

}  // namespace

Conv1D::Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options)
    : Layer(kClassName, options.name), filters_(filters), kernel_size_(kernel_size), opt_(std::move(options)) {
  LS_CHECK(filters > 0 && kernel_size > 0 && opt_.strides > 0, ValueError,
           "Conv1D needs positive filters, kernel_size and strides, got ", filters, ", ", kernel_size, ", ",
           opt_.strides);
  LS_CHECK(opt_.padding == "valid" || opt_.padding == "same" || opt_.padding == "causal", ValueError, "Conv1D layer \"",
           name(), "\": padding=\"", opt_.padding,
           "\" is not supported (lockstep has \"valid\", \"same\" and \"causal\")");
  // Causal padding is done by hand in call(); the convolution after it is a valid one.
  conv_ = {.stride_h = 1, .stride_w = opt_.strides, .padding = opt_.padding == "same" ? Padding::same : Padding::valid};
  activation_ = activations::get(opt_.activation);  // an unknown name fails here, not at the first call
}

void Conv1D::build(const Shape& s) {
  LS_CHECK(s.rank() == 2, ValueError, "Conv1D \"", name(), "\" expects inputs of shape (batch, steps, channels), got ",
           detail::with_none(s));
  LS_CHECK(opt_.padding != "valid" || s[0] >= kernel_size_, ValueError, "Conv1D \"", name(), "\": inputs of ", s[0],
           " steps are shorter than its kernel_size ", kernel_size_, " with padding \"valid\"");
  kernel_ =
      add_weight("kernel", {kernel_size_, s[1], filters_}, opt_.kernel_initializer, true, opt_.kernel_regularizer);
  if (opt_.use_bias) bias_ = add_weight("bias", {filters_}, opt_.bias_initializer);
}

Shape Conv1D::compute_output_shape(const Shape& s) const {
  const int64_t steps =
      opt_.padding == "valid" ? (s[0] - kernel_size_) / opt_.strides + 1 : (s[0] + opt_.strides - 1) / opt_.strides;
  return Shape{steps, filters_};
}

Tensor Conv1D::call(const Tensor& x, bool) {
  Tensor padded = x;
  if (opt_.padding == "causal" && kernel_size_ > 1)
    padded = concat({zeros(Shape{x.dim(0), kernel_size_ - 1, x.dim(2)}, x.dtype(), x.device()), x}, 1);
  const Tensor image = reshape(padded, Shape{padded.dim(0), 1, padded.dim(1), padded.dim(2)});
  const Tensor kernel = reshape(autocast(kernel_), Shape{1, kernel_size_, kernel_.shape()[1], filters_});
  const Tensor y = nn::conv2d(image, kernel, opt_.use_bias ? autocast(bias_) : Tensor(), conv_);
  return activation_(reshape(y, Shape{y.dim(0), y.dim(2), filters_}));
}

nlohmann::json Conv1D::get_config() const {
  return detail::conv_config(Layer::get_config(), 1, filters_, kernel_size_, opt_);
}

std::vector<Param> Conv1D::params() {
  return detail::conv_params(1, "the window's length (n or [n])",
                             "\"valid\" (no padding), \"same\" (ceil(steps / strides) outputs) or \"causal\" "
                             "(zeros before the sequence, so that no output sees a later step)");
}

std::shared_ptr<Conv1D> Conv1D::from_config(const nlohmann::json& c) {
  const detail::ConfigReader r(kClassName, c);
  return std::make_shared<Conv1D>(
      detail::json_int(c.at("filters"), "filters"), one_size(c, "kernel_size"),
      Conv1DOptions{.strides = one_size(c, "strides"),
                    .padding = c.value("padding", "valid"),
                    .activation = r.activation(),
                    .use_bias = c.value("use_bias", true),
                    .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                    .bias_initializer = r.initializer("bias_initializer", "zeros"),
                    .kernel_regularizer = r.regularizer("kernel_regularizer"),
                    .name = r.name()});
}

}  // namespace lockstep::keras::layers
