// keras.layers.Concatenate: inputs joined along one axis, the batch axis counted as Keras does.
#include "lockstep/keras/layers/merging/concatenate.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::without_batch;

Concatenate::Concatenate(int64_t axis, std::string name) : Merge(kClassName, std::move(name)), axis_(axis) {}

Shape Concatenate::compute_output_shape_list(const std::vector<Shape>& shapes) const {
  LS_CHECK(shapes.size() >= 2, ValueError, "Concatenate layer \"", name(), "\" needs a list of at least 2 inputs, got ",
           shapes.size());
  const int64_t rank = shapes[0].rank() + 1;  // with the batch axis
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  LS_CHECK(axis >= 1 && axis < rank, ValueError, "Concatenate layer \"", name(), "\": axis ", axis_,
           " is out of range for inputs of shape ", detail::with_none(shapes[0]), " (the batch axis cannot be joined)");
  std::vector<int64_t> out = shapes[0].dims();
  out[axis - 1] = 0;
  for (const Shape& s : shapes) {
    bool match = s.rank() == shapes[0].rank();
    for (int64_t d = 0; match && d < s.rank(); ++d) match = d == axis - 1 || s[d] == shapes[0][d];
    LS_CHECK(match, ValueError, "Concatenate layer \"", name(),
             "\" requires inputs with matching shapes except for the concatenation axis ", axis_, ", got ",
             detail::with_none(shapes[0]), " and ", detail::with_none(s));
    out[axis - 1] += s[axis - 1];
  }
  return Shape(out);
}

Tensor Concatenate::call_list(const std::vector<Tensor>& xs, bool) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(without_batch(x.shape()));
  compute_output_shape_list(shapes);
  return concat(xs, axis_ < 0 ? axis_ + xs[0].rank() : axis_);
}

nlohmann::json Concatenate::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = axis_;
  return c;
}

std::vector<Param> Concatenate::params() { return {{"axis", -1, "the axis the inputs are joined along"}}; }
std::shared_ptr<Concatenate> Concatenate::from_config(const nlohmann::json& c) {
  return std::make_shared<Concatenate>(detail::json_int(c.value("axis", nlohmann::json(-1)), "axis"),
                                       c.value("name", ""));
}

}  // namespace lockstep::keras::layers
