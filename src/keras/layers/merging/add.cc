// keras.layers.Add: the sum of inputs of one shape.
#include "lockstep/keras/layers/merging/add.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::without_batch;

Shape Add::compute_output_shape_list(const std::vector<Shape>& shapes) const {
  LS_CHECK(shapes.size() >= 2, ValueError, "Add layer \"", name(), "\" needs a list of at least 2 inputs, got ",
           shapes.size());
  for (const Shape& s : shapes)
    LS_CHECK(s == shapes[0], ValueError, "Add layer \"", name(), "\": inputs must have the same shape, got ",
             detail::with_none(shapes[0]), " and ", detail::with_none(s));
  return shapes[0];
}

Tensor Add::call_list(const std::vector<Tensor>& xs, bool) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(without_batch(x.shape()));
  compute_output_shape_list(shapes);
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y;
}

std::vector<Param> Add::params() { return {}; }
std::shared_ptr<Add> Add::from_config(const nlohmann::json& c) {
  return std::make_shared<Add>(c.value("name", ""));
}

}  // namespace lockstep::keras::layers
