// The global pooling layers' shared options, input check, output shape and config.
#include "lockstep/keras/layers/pooling/base_global_pooling.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::check_supported;

GlobalPooling::GlobalPooling(std::string class_name, int rank, GlobalPoolingOptions options)
    : Layer(std::move(class_name), options.name), rank_(rank), keepdims_(options.keepdims) {
  check_supported(options.data_format == "channels_last", this->class_name(), name(),
                  "data_format=\"" + options.data_format + "\"",
                  rank == 1 ? "lockstep's sequences are channels_last (batch, steps, features)"
                            : "lockstep's images are channels_last (NHWC)");
}

void GlobalPooling::build(const Shape& s) {
  LS_CHECK(s.rank() == rank_ + 1, ValueError, class_name(), " \"", name(), "\" expects inputs of shape ",
           rank_ == 1 ? "(batch, steps, features)" : "(batch, height, width, channels)", ", got ", detail::with_none(s));
}

Shape GlobalPooling::compute_output_shape(const Shape& s) const {
  if (!keepdims_) return Shape{s[-1]};
  std::vector<int64_t> dims(static_cast<size_t>(rank_), 1);
  dims.push_back(s[-1]);
  return Shape(dims);
}

std::vector<int64_t> GlobalPooling::pooled_axes() const { return rank_ == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2}; }

nlohmann::json GlobalPooling::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = "channels_last";
  c["keepdims"] = keepdims_;
  return c;
}

}  // namespace lockstep::keras::layers
