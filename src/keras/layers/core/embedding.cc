// keras.layers.Embedding: rows of a table gathered by index; gather's backward gives the gradient.
#include "lockstep/keras/layers/core/embedding.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::check_supported;

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(kClassName, options.name), input_dim_(input_dim), output_dim_(output_dim), opt_(std::move(options)) {
  LS_CHECK(input_dim > 0 && output_dim > 0, ValueError, "Embedding needs positive input_dim and output_dim, got ",
           input_dim, " and ", output_dim);
  check_supported(!opt_.mask_zero, kClassName, name(), "mask_zero=true", "lockstep has no masking");
}

void Embedding::build(const Shape&) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, opt_.embeddings_initializer);
}

Shape Embedding::compute_output_shape(const Shape& s) const {
  std::vector<int64_t> dims = s.dims();
  dims.push_back(output_dim_);
  return Shape(dims);
}

Tensor Embedding::call(const Tensor& x, bool) {
  const bool integer = x.dtype() == DType::int32 || x.dtype() == DType::int64 || x.dtype() == DType::uint8;
  // The backward of gather adds each output row's gradient into the row it came from.
  return gather(autocast(embeddings_), integer ? x : cast(x, DType::int64));
}

nlohmann::json Embedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = opt_.embeddings_initializer.ptr->get_config();
  c["embeddings_regularizer"] = nullptr;
  c["activity_regularizer"] = nullptr;
  c["embeddings_constraint"] = nullptr;
  c["mask_zero"] = false;
  c["quantization_config"] = nullptr;
  return c;
}

std::vector<Param> Embedding::params() {
  using detail::operator+;
  return std::vector<Param>{{"input_dim", kRequired, "the vocabulary's size: indices run from 0 to input_dim - 1"},
                            {"output_dim", kRequired, "the width of each index's vector"},
                            {"embeddings_initializer", "uniform", "the table's initial values"}} +
         detail::plain_kernel({"embeddings_regularizer", "embeddings_constraint"}) +
         std::vector<Param>{{"mask_zero", false, "lockstep has no masking: only False"},
                            Param::fixed("weights", nullptr, "not implemented by lockstep: call set_weights() once the layer is built")} +
         detail::plain_kernel({"lora_rank", "lora_alpha", "quantization_config"});
}

std::shared_ptr<Embedding> Embedding::from_config(const nlohmann::json& c) {
  check_supported(!c.value("mask_zero", false), kClassName, c.value("name", ""), "mask_zero=true",
                  "lockstep has no masking");
  return std::make_shared<Embedding>(
      detail::json_int(c.at("input_dim"), "input_dim"), detail::json_int(c.at("output_dim"), "output_dim"),
      EmbeddingOptions{.embeddings_initializer = initializers::from_config(c.at("embeddings_initializer")),
                       .name = c.value("name", "")});
}

}  // namespace lockstep::keras::layers
