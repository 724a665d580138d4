// Helpers the layers share: reading a layer's config, parameter-table pieces, and what the convolution, pooling
// and merging layers of one family have in common.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "../keras-impl.h"
#include "lockstep/core/shape.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/layers/pooling/base_global_pooling.h"
#include "lockstep/keras/layers/pooling/base_pooling.h"
#include "lockstep/keras/registry.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras::detail {

// A shape without its first (batch) axis.
inline Shape without_batch(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()));
}

// An option lockstep does not implement: one error naming the layer and the option.
inline void check_supported(bool ok, const std::string& cls, const std::string& name, const std::string& option,
                            const std::string& why) {
  LS_CHECK(ok, ValueError, cls, " layer \"", name, "\": ", option, " is not supported (", why, ")");
}

// data_format, as every layer with one declares it: lockstep's images are NHWC (channels_last, Keras' default).
inline Param channels_last() {
  return Param::fixed("data_format", nullptr, "lockstep's images are channels_last (NHWC)", {"channels_last"});
}
// Arguments of a layer that lockstep takes only at Keras' default, None (constraints, LoRA, quantization).
inline std::vector<Param> plain_kernel(const std::vector<const char*>& keys) {
  std::vector<Param> out;
  for (const char* key : keys) out.push_back(Param::fixed(key, nullptr, "not implemented by lockstep"));
  return out;
}
// One table after another.
inline std::vector<Param> operator+(std::vector<Param> a, const std::vector<Param>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The arguments of Keras' convolutions of `rank` spatial axes (Conv1D, Conv2D), in Keras' order: Keras' defaults
// are a number for rank 1 and a tuple for more; `kernel_doc` and `padding_doc` say what lockstep's windows and
// paddings are.
std::vector<Param> conv_params(int rank, const std::string& kernel_doc, const std::string& padding_doc);
// A convolution's get_config beyond the Layer's (`c`): Keras 3's keys, sizes as tuples of `rank`.
template <typename Options>
nlohmann::json conv_config(nlohmann::json c, int rank, int64_t filters, int64_t kernel_size, const Options& o) {
  const auto tuple = [rank](int64_t v) { return std::vector<int64_t>(static_cast<size_t>(rank), v); };
  c["filters"] = filters;
  c["kernel_size"] = tuple(kernel_size);
  c["strides"] = tuple(o.strides);
  c["padding"] = o.padding;
  c["data_format"] = "channels_last";
  c["dilation_rate"] = tuple(1);
  c["groups"] = 1;
  c["activation"] = o.activation.empty() ? "linear" : o.activation;
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = o.kernel_initializer.ptr->get_config();
  c["bias_initializer"] = o.bias_initializer.ptr->get_config();
  c["kernel_regularizer"] = o.kernel_regularizer ? o.kernel_regularizer->get_config() : nlohmann::json();
  for (const char* none : {"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"})
    c[none] = nullptr;
  return c;
}

// Reads one layer's config for its class's from_config and refuses, naming the layer and the option, what lockstep
// cannot do. Holds `config` by reference.
class ConfigReader {
 public:
  ConfigReader(std::string class_name, const nlohmann::json& config);
  const std::string& name() const { return name_; }
  // A key that must be absent, null or one of `allowed` (TF writes the defaults).
  void only(const char* key, std::initializer_list<nlohmann::json> allowed = {}) const;
  // A window's size given as n or as `rank` equal sizes ([n] or [n, n], Keras' tuples): lockstep's pooling and
  // convolution windows are square.
  int64_t window(const char* key, int rank = 2) const;
  // The activation's name, "" for linear; only built-in activations by name.
  std::string activation() const;
  InitializerRef initializer(const char* key, const char* fallback) const;
  regularizers::RegularizerPtr regularizer(const char* key) const;

 private:
  std::string cls_;
  const nlohmann::json& c_;
  std::string name_;
};

// ---- pooling: what MaxPooling2D and AveragePooling2D, and the two global poolings, share ----

template <typename Pooling>
std::shared_ptr<Pooling> pooling_from_config(const nlohmann::json& c, int rank = 2) {
  const ConfigReader r(Pooling::kClassName, c);
  const bool strided = c.contains("strides") && !c["strides"].is_null();
  return std::make_shared<Pooling>(
      r.window("pool_size", rank),
      layers::PoolingOptions{.strides = strided ? std::optional(r.window("strides", rank)) : std::nullopt,
                             .padding = c.value("padding", "valid"),
                             .name = r.name()});
}

// Pooling's arguments; `pool_size` is Keras' default pool size (AveragePooling2D has none).
inline std::vector<Param> pooling_params(const nlohmann::json& pool_size) {
  return {{"pool_size", pool_size, "the window's side (n or [n, n]: lockstep's windows are square)"},
          {"strides", nullptr, "the step between windows; None is pool_size"},
          {"padding", "valid", "\"valid\" or \"same\""},
          channels_last(),
          {"name", nullptr, "the layer's name"}};
}

template <typename Pooling>
std::shared_ptr<Pooling> global_pooling_from_config(const nlohmann::json& c) {
  return std::make_shared<Pooling>(layers::GlobalPoolingOptions{.keepdims = c.value("keepdims", false),
                                                                .data_format = c.value("data_format", "channels_last"),
                                                                .name = c.value("name", "")});
}

inline std::vector<Param> global_pooling_params() {
  return {channels_last(), {"keepdims", false, "keep the pooled axes, of size 1"}};
}

}  // namespace lockstep::keras::detail
