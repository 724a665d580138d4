// Helpers shared inside the keras layer.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/core/shape.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/registry.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {
class Layer;
}
namespace lockstep::keras::detail {

// "Conv2D" -> "conv2d", then "conv2d_1", ...: Keras' default names, unique per process until clear_session().
std::string unique_name(const std::string& class_name);

// Keras' naming.to_snake_case: "MaxPooling2D" -> "max_pooling2d".
std::string to_snake_case(const std::string& class_name);

// "(None, 26, 26, 32)": a feature shape with the batch dimension shown as Keras shows it.
std::string with_none(const Shape& features);

// A config's integer (units, a size, a seed): nlohmann's get<int64_t>() would also take a float and convert
// 1e30 with undefined behaviour. Throws ValueError naming `key` for anything but a JSON integer.
int64_t json_int(const nlohmann::json& j, const std::string& key);
// A config's list of integers (a shape): ValueError unless an array of JSON integers.
std::vector<int64_t> json_ints(const nlohmann::json& j, const std::string& key);

// Reads one layer's config for its class's from_config and refuses, naming the layer and the option, what lockstep
// cannot do. Holds `config` by reference.
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

class ConfigReader {
 public:
  ConfigReader(std::string class_name, const nlohmann::json& config);
  const std::string& name() const { return name_; }
  // A key that must be absent, null or one of `allowed` (TF writes the defaults).
  void only(const char* key, std::initializer_list<nlohmann::json> allowed = {}) const;
  // A size given as n or [n, n] (Keras' tuples): lockstep's pooling and convolution are square.
  int64_t square(const char* key) const;
  // The activation's name, "" for linear; only built-in activations by name.
  std::string activation() const;
  InitializerRef initializer(const char* key, const char* fallback) const;
  regularizers::RegularizerPtr regularizer(const char* key) const;

 private:
  std::string cls_;
  const nlohmann::json& c_;
  std::string name_;
};

// While one is alive on this thread, layers refuse to create weights with more elements in all than it allows
// (DataLossError): load_model's config cannot need more parameters than its weights file has bytes, so a
// corrupt size fails before anything is allocated.
class WeightBudget {
 public:
  explicit WeightBudget(int64_t max_elements);
  ~WeightBudget();
  WeightBudget(const WeightBudget&) = delete;
  WeightBudget& operator=(const WeightBudget&) = delete;

 private:
  int64_t left_;
  int64_t* outer_;
};

}  // namespace lockstep::keras::detail
