// keras.layers.Dropout: a mask drawn from the layer's per-replica Philox stream while training.
#include "lockstep/keras/layers/regularization/dropout.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer(kClassName, options.name), rate_(rate), seed_(options.seed), rng_(add_random_stream(options.seed)) {
  LS_CHECK(rate >= 0 && rate < 1, ValueError, "Dropout rate must be in [0, 1), got ", rate);
}

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  Tensor keep = cast(
      greater_equal(random_uniform(x.shape(), rng_->current(), 0, 1, x.dtype()), scalar(rate_, x.dtype())), x.dtype());
  return x * keep * (1.0 / (1.0 - rate_));
}

nlohmann::json Dropout::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["rate"] = rate_;
  c["seed"] = seed_ ? nlohmann::json(*seed_) : nlohmann::json();
  c["noise_shape"] = nullptr;
  return c;
}

std::vector<Param> Dropout::params() {
  return {{"rate", kRequired, "the fraction of the inputs set to 0 in training"},
          Param::fixed("noise_shape", nullptr, "not implemented by lockstep"),
          {"seed", nullptr, "the seed of the layer's random stream; None draws one from the global seed"}};
}

std::shared_ptr<Dropout> Dropout::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  std::optional<uint64_t> seed;
  if (c.contains("seed") && !c["seed"].is_null()) seed = static_cast<uint64_t>(detail::json_int(c["seed"], "seed"));
  return std::make_shared<Dropout>(c.at("rate").get<double>(), DropoutOptions{.seed = seed, .name = r.name()});
}

}  // namespace lockstep::keras::layers
