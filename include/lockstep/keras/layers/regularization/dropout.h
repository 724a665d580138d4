// keras.layers.Dropout: random zeroing of inputs while training, from a per-replica random stream.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct DropoutOptions {
  std::optional<uint64_t> seed = std::nullopt;
  std::string name = "";
};
// Zeroes a fraction `rate` of inputs while training and scales the rest by 1 / (1 - rate).
class Dropout : public Layer {
 public:
  static constexpr const char* kClassName = "Dropout";
  static std::shared_ptr<Dropout> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Dropout>(*this); }
  explicit Dropout(double rate, DropoutOptions options = {});
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double rate_;
  std::optional<uint64_t> seed_;  // for get_config
  distribute::ReplicaRandomPtr rng_;
};

}  // namespace lockstep::keras::layers
