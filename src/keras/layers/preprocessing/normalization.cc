// keras.layers.Normalization: given or adapted mean and variance per feature of the last axis.
#include "lockstep/keras/layers/preprocessing/normalization.h"

#include <algorithm>

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::check_supported;

Normalization::Normalization(NormalizationOptions options) : Layer(kClassName, options.name), opt_(std::move(options)) {
  LS_CHECK(opt_.mean.has_value() == opt_.variance.has_value(), ValueError, "Normalization \"", name(),
           "\": give both mean and variance, or neither (and call adapt)");
  if (opt_.mean) {
    auto tensor = [](const std::vector<double>& v) {
      return cast(from_vector(v, Shape{static_cast<int64_t>(v.size())}), DType::float32);
    };
    given_mean_ = tensor(*opt_.mean);
    given_variance_ = tensor(*opt_.variance);
  }
}

void Normalization::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "Normalization \"", name(), "\" needs inputs of rank >= 2 (a batch of features)");
  const int64_t features = s[-1];
  if (opt_.mean) {
    for (const auto* given : {&*opt_.mean, &*opt_.variance})
      LS_CHECK(given->size() == 1 || static_cast<int64_t>(given->size()) == features, ValueError, "Normalization \"",
               name(), "\": ", given->size(), " statistics for ", features, " features; give one or one per feature");
    return;
  }
  mean_ = add_weight("mean", Shape{features}, "zeros", false);
  variance_ = add_weight("variance", Shape{features}, "ones", false);
  add_weight("count", Shape{}, "zeros", false, nullptr, DType::int64);  // Keras 3 keeps it (at 0) for old files
}

void Normalization::adapt(const Tensor& data) {
  LS_CHECK(!opt_.mean, ValueError, "Normalization \"", name(), "\" was given its mean and variance: adapt has nothing to set");
  LS_CHECK(data.rank() >= 1 && data.numel() > 0, ValueError, "Normalization \"", name(),
           "\": adapt needs a non-empty array of examples, got shape ", data.shape().str());
  const Tensor x = cast(data.rank() == 1 ? reshape(data, Shape{data.dim(0), 1}) : data, DType::float64);
  ensure_built(Shape(std::vector<int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end())));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) axes.push_back(d);
  NoGradGuard no_grad;
  const Tensor mean = reduce_mean(x, axes);
  mean_.assign(cast(mean, DType::float32));
  variance_.assign(cast(reduce_mean(square(x - mean), axes), DType::float32));
}

Tensor Normalization::call(const Tensor& x_in, bool) {
  const Tensor x = x_in.dtype() == compute_dtype() ? x_in : cast(x_in, compute_dtype());
  auto statistic = [&](const Tensor& given, const Variable& weight) {
    if (!given.defined()) return autocast(weight);
    return given.dtype() == x.dtype() ? given : cast(given, x.dtype());
  };
  const Tensor mean = statistic(given_mean_, mean_);
  const Tensor deviation = maximum(sqrt(statistic(given_variance_, variance_)), scalar(1e-7, x.dtype()));
  return opt_.invert ? mean + x * deviation : (x - mean) / deviation;
}

nlohmann::json Normalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = nlohmann::json::array({-1});
  c["invert"] = opt_.invert;
  c["mean"] = opt_.mean ? nlohmann::json(*opt_.mean) : nlohmann::json(nullptr);
  c["variance"] = opt_.variance ? nlohmann::json(*opt_.variance) : nlohmann::json(nullptr);
  return c;
}

std::vector<Param> Normalization::params() {
  return {{"axis", -1, "the axis of the features: lockstep normalises each feature of the last (-1)"},
          {"mean", nullptr, "the features' means; None: adapt() computes them"},
          {"variance", nullptr, "the features' variances; None: adapt() computes them"},
          {"invert", false, "undo the normalisation instead"}};
}

std::shared_ptr<Normalization> Normalization::from_config(const nlohmann::json& c) {
  const std::string name = c.value("name", "");
  nlohmann::json axis = c.value("axis", nlohmann::json(-1));
  if (axis.is_array() && axis.size() == 1) axis = axis[0];
  check_supported(axis.is_number_integer() && axis.get<int64_t>() == -1, kClassName, name, "axis=" + axis.dump(),
                  "only the last axis (-1) is");
  auto statistic = [&](const char* key) -> std::optional<std::vector<double>> {
    const nlohmann::json v = c.value(key, nlohmann::json(nullptr));
    if (v.is_null()) return std::nullopt;
    LS_CHECK(v.is_number() || (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const auto& e) {
                                 return e.is_number();
                               })),
             ValueError, "Normalization \"", name, "\": ", key, " must be a number or a list of numbers, got ",
             v.dump().substr(0, 40));
    return v.is_number() ? std::vector<double>{v.get<double>()} : v.get<std::vector<double>>();
  };
  return std::make_shared<Normalization>(NormalizationOptions{.mean = statistic("mean"),
                                                              .variance = statistic("variance"),
                                                              .invert = c.value("invert", false),
                                                              .name = name});
}

}  // namespace lockstep::keras::layers
