// keras.layers.Embedding: a lookup table of vectors for integer indices.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct EmbeddingOptions {
  InitializerRef embeddings_initializer = initializers::RandomUniform(-0.05, 0.05);  // Keras' "uniform"
  bool mask_zero = false;  // masking is not supported: true is an error
  std::string name = "";
};
// Looks up rows of an [input_dim, output_dim] table: integer inputs (batch, ...) give (batch, ..., output_dim).
// Float inputs are cast to integers, as Keras does; an index outside [0, input_dim) is an error.
class Embedding : public Layer {
 public:
  static constexpr const char* kClassName = "Embedding";
  static std::shared_ptr<Embedding> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  LayerPtr clone() const override { return std::make_shared<Embedding>(*this); }
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& embeddings() const { return embeddings_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions opt_;
  Variable embeddings_;
};

}  // namespace lockstep::keras::layers
