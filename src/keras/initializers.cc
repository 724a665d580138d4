// Keras initializers drawing from Philox streams.
#include "lockstep/keras/initializers.h"

#include <atomic>
#include <cmath>

#include "keras-impl.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::keras {

namespace utils {
namespace {
std::atomic<uint64_t> g_seed{1337};  // fixed by default: unseeded programs are still reproducible
std::atomic<uint64_t> g_stream{0};
}  // namespace

void set_random_seed(uint64_t seed) {
  g_seed = seed;
  g_stream = 0;
}

Philox next_generator() { return Philox(g_seed, g_stream++); }

namespace {
class GlobalRandomState final : public train::Trackable {
 public:
  train::TrackableState save() const override { return {{}, {{"seed", g_seed.load()}, {"stream", g_stream.load()}}}; }
  train::RestoreMatch restore(const train::TrackableState& state) override {
    if (!state.values.contains("seed") || !state.values.contains("stream")) return {{"seed", "stream"}, {}};
    g_seed = state.values["seed"].get<uint64_t>();
    g_stream = state.values["stream"].get<uint64_t>();
    return {};
  }
};
}  // namespace

train::TrackablePtr global_random_state() { return std::make_shared<GlobalRandomState>(); }
}  // namespace utils

namespace initializers {

namespace {
// Keras' fans: [in, out] for dense kernels, [h, w, in, out] for convolution kernels.
std::pair<double, double> fans(const Shape& s) {
  if (s.rank() == 0) return {1, 1};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  double receptive = 1;
  for (int64_t d = 0; d + 2 < s.rank(); ++d) receptive *= double(s[d]);
  return {receptive * double(s[-2]), receptive * double(s[-1])};
}

Philox generator(const std::optional<uint64_t>& seed) { return seed ? Philox(*seed) : utils::next_generator(); }

nlohmann::json seed_json(const std::optional<uint64_t>& seed) { return seed ? nlohmann::json(*seed) : nlohmann::json(); }

// Keras 3's serialised form of an initializer.
nlohmann::json keras_object(const char* class_name, nlohmann::json config) {
  return {{"module", "keras.initializers"}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}
// The variance-scaling initializers' config, with Keras 3's (unused here) axes.
nlohmann::json fan_config(const std::optional<uint64_t>& seed) {
  return {{"seed", seed_json(seed)}, {"input_axes", nullptr}, {"output_axes", nullptr}};
}

class GlorotUniformInit : public Initializer {
 public:
  explicit GlorotUniformInit(std::optional<uint64_t> seed) : seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    auto [in, out] = fans(shape);
    double limit = std::sqrt(6.0 / (in + out));
    Philox rng = generator(seed_);
    return random_uniform(shape, rng, -limit, limit, dtype);
  }
  nlohmann::json get_config() const override { return keras_object("GlorotUniform", fan_config(seed_)); }

 private:
  std::optional<uint64_t> seed_;
};

class HeNormalInit : public Initializer {
 public:
  explicit HeNormalInit(std::optional<uint64_t> seed) : seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    // 0.8796... is the stddev of a unit normal truncated at two standard deviations.
    double stddev = std::sqrt(2.0 / fans(shape).first) / 0.87962566103423978;
    Philox rng = generator(seed_);
    return truncated_normal(shape, rng, 0, stddev, dtype);
  }
  nlohmann::json get_config() const override { return keras_object("HeNormal", fan_config(seed_)); }

 private:
  std::optional<uint64_t> seed_;
};

class RandomNormalInit : public Initializer {
 public:
  RandomNormalInit(double mean, double stddev, std::optional<uint64_t> seed) : mean_(mean), stddev_(stddev), seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    Philox rng = generator(seed_);
    return random_normal(shape, rng, mean_, stddev_, dtype);
  }
  nlohmann::json get_config() const override {
    return keras_object("RandomNormal", {{"mean", mean_}, {"stddev", stddev_}, {"seed", seed_json(seed_)}});
  }

 private:
  double mean_, stddev_;
  std::optional<uint64_t> seed_;
};

class RandomUniformInit : public Initializer {
 public:
  RandomUniformInit(double minval, double maxval, std::optional<uint64_t> seed)
      : minval_(minval), maxval_(maxval), seed_(seed) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    Philox rng = generator(seed_);
    return random_uniform(shape, rng, minval_, maxval_, dtype);
  }
  nlohmann::json get_config() const override {
    return {{"class_name", "RandomUniform"},
            {"config", {{"minval", minval_}, {"maxval", maxval_}, {"seed", seed_json(seed_)}}}};
  }

 private:
  double minval_, maxval_;
  std::optional<uint64_t> seed_;
};

class ConstantInit : public Initializer {
 public:
  explicit ConstantInit(double value) : value_(value) {}
  Tensor operator()(const Shape& shape, DType dtype) const override { return full(shape, value_, dtype); }
  nlohmann::json get_config() const override { return keras_object(value_ == 0 ? "Zeros" : "Ones", nlohmann::json::object()); }

 private:
  double value_;
};

std::optional<uint64_t> seed_from(const nlohmann::json& c) {
  if (!c.contains("seed") || c["seed"].is_null()) return std::nullopt;
  return static_cast<uint64_t>(detail::json_int(c["seed"], "seed"));  // not get<uint64_t>(): -1.5 would be undefined
}
}  // namespace

InitializerPtr GlorotUniform(std::optional<uint64_t> seed) { return std::make_shared<GlorotUniformInit>(seed); }
InitializerPtr HeNormal(std::optional<uint64_t> seed) { return std::make_shared<HeNormalInit>(seed); }
InitializerPtr RandomNormal(double mean, double stddev, std::optional<uint64_t> seed) {
  return std::make_shared<RandomNormalInit>(mean, stddev, seed);
}
InitializerPtr RandomUniform(double minval, double maxval, std::optional<uint64_t> seed) {
  return std::make_shared<RandomUniformInit>(minval, maxval, seed);
}
InitializerPtr Zeros() { return std::make_shared<ConstantInit>(0.0); }
InitializerPtr Ones() { return std::make_shared<ConstantInit>(1.0); }

namespace {
Param seed() { return {"seed", nullptr, "the seed of the values; None draws one from the global seed"}; }
// GlorotUniform's and HeNormal's (Keras' VarianceScaling family's) arguments.
std::vector<Param> variance_scaling_params() {
  return {seed(), Param::fixed("input_axes", nullptr, "lockstep's fans are Keras' defaults"),
          Param::fixed("output_axes", nullptr, "lockstep's fans are Keras' defaults")};
}
}  // namespace

const Registry<InitializerPtr>& registry() {
  static const Registry<InitializerPtr> r(
      "initializer",
      {{"GlorotUniform", [](const nlohmann::json& c) { return GlorotUniform(seed_from(c)); }, {"glorot_uniform"},
        variance_scaling_params()},
       {"HeNormal", [](const nlohmann::json& c) { return HeNormal(seed_from(c)); }, {"he_normal"},
        variance_scaling_params()},
       {"RandomNormal",
        [](const nlohmann::json& c) {
          return RandomNormal(c.at("mean").get<double>(), c.at("stddev").get<double>(), seed_from(c));
        },
        {"random_normal"},
        {{"mean", 0.0, "the distribution's mean"}, {"stddev", 0.05, "its standard deviation"}, seed()}},
       {"RandomUniform",
        [](const nlohmann::json& c) {
          return RandomUniform(c.at("minval").get<double>(), c.at("maxval").get<double>(), seed_from(c));
        },
        {"uniform", "random_uniform"},
        {{"minval", -0.05, "the lower bound"}, {"maxval", 0.05, "the upper bound (excluded)"}, seed()}},
       {"Zeros", [](const nlohmann::json&) { return Zeros(); }, {"zeros"}},
       {"Ones", [](const nlohmann::json&) { return Ones(); }, {"ones"}}});
  return r;
}

InitializerPtr get(const std::string& identifier) {
  return registry().get(identifier);
}

InitializerPtr from_config(const nlohmann::json& config) {
  if (config.is_string()) return get(config.get<std::string>());  // Keras also accepts a bare name
  return registry().from_config(config.at("class_name").get<std::string>(),
                                config.value("config", nlohmann::json::object()));
}

}  // namespace initializers
}  // namespace lockstep::keras
