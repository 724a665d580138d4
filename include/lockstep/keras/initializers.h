// Weight initializers (keras.initializers), seeded from Philox. Without an explicit seed each weight
// draws from its own stream of the global seed set by keras::utils::set_random_seed, so a program builds
// the same initial weights on every run and every worker.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lockstep/core/philox.h"
#include "lockstep/keras/registry.h"
#include "lockstep/tensor/tensor.h"
#include "lockstep/train/trackable.h"

namespace lockstep::keras {

namespace utils {
// Seeds every unseeded initializer and dropout layer created afterwards (keras.utils.set_random_seed).
void set_random_seed(uint64_t seed);
// The generator for the next weight or layer that has no seed of its own.
Philox next_generator();
// The global seed's position (seed and next stream) as a checkpoint object, so that layers created after a
// restore draw what they would have drawn in the uninterrupted run.
train::TrackablePtr global_random_state();
}  // namespace utils

namespace initializers {

class Initializer {
 public:
  virtual ~Initializer() = default;
  // Values for a weight of `shape`; kernels are HWIO (conv) or [in, out] (dense), which defines fan in/out.
  virtual Tensor operator()(const Shape& shape, DType dtype) const = 0;
  virtual nlohmann::json get_config() const = 0;
};
using InitializerPtr = std::shared_ptr<const Initializer>;

// Uniform in [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)): Keras' default kernel initializer.
InitializerPtr GlorotUniform(std::optional<uint64_t> seed = {});
// Truncated normal with stddev sqrt(2 / fan_in) (corrected for the truncation as Keras does).
InitializerPtr HeNormal(std::optional<uint64_t> seed = {});
InitializerPtr RandomNormal(double mean = 0.0, double stddev = 0.05, std::optional<uint64_t> seed = {});
// Uniform in [minval, maxval): Keras' "uniform", Embedding's default.
InitializerPtr RandomUniform(double minval = -0.05, double maxval = 0.05, std::optional<uint64_t> seed = {});
InitializerPtr Zeros();
InitializerPtr Ones();
// Every initializer lockstep has, by Keras class name, with Keras' short names ("glorot_uniform", "uniform").
const Registry<InitializerPtr>& registry();
// By class or short name, with default options; unknown names throw ValueError listing the known ones.
InitializerPtr get(const std::string& identifier);
// {"class_name", "config"} as get_config() writes it, or a name.
InitializerPtr from_config(const nlohmann::json& config);

}  // namespace initializers

// An initializer given by name or object, so options read `.kernel_initializer = "he_normal"`.
struct InitializerRef {
  initializers::InitializerPtr ptr;
  InitializerRef(const char* name) : ptr(initializers::get(name)) {}
  InitializerRef(const std::string& name) : ptr(initializers::get(name)) {}
  InitializerRef(initializers::InitializerPtr p) : ptr(std::move(p)) {}
};

}  // namespace lockstep::keras
