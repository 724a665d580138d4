// keras.layers.Reshape: the features reshaped, one -1 inferred.
#include "lockstep/keras/layers/reshaping/reshape.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::without_batch;

Reshape::Reshape(Shape target_shape, std::string name)
    : Layer(kClassName, std::move(name)), target_(std::move(target_shape)) {}

Shape Reshape::compute_output_shape(const Shape& input_shape) const {
  std::vector<int64_t> dims = target_.dims();
  int64_t known = 1;
  for (int64_t d : dims)
    if (d != -1) known *= d;
  for (int64_t& d : dims)
    if (d == -1) d = input_shape.numel() / std::max<int64_t>(known, 1);
  Shape out(dims);
  LS_CHECK(out.numel() == input_shape.numel(), ValueError, "Reshape \"", name(), "\": total size of the new array must be unchanged, input_shape = ",
           input_shape.str(), ", output_shape = ", target_.str());
  return out;
}

Tensor Reshape::call(const Tensor& x, bool) {
  const Shape features = compute_output_shape(without_batch(x.shape()));
  std::vector<int64_t> dims{x.dim(0)};
  dims.insert(dims.end(), features.dims().begin(), features.dims().end());
  return reshape(x, Shape(dims));
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["target_shape"] = target_.dims();
  return c;
}

std::vector<Param> Reshape::params() {
  return {{"target_shape", kRequired, "the output's shape without the batch axis; one -1 is inferred"}};
}
std::shared_ptr<Reshape> Reshape::from_config(const nlohmann::json& c) {
  return std::make_shared<Reshape>(Shape(detail::json_ints(c.at("target_shape"), "target_shape")), c.value("name", ""));
}

}  // namespace lockstep::keras::layers
