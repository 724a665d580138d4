// The layer registry: every layer class's registration, what every layer's config shares (base_params), reading a
// layer's config, and layers to and from Keras 3's serialised form.
#include "lockstep/keras/layers/registry.h"

#include <type_traits>

#include "layers-impl.h"
#include "lockstep/keras/layers.h"

namespace lockstep::keras {

namespace detail {

int64_t json_int(const nlohmann::json& j, const std::string& key) {
  LS_CHECK(j.is_number_integer() && (!j.is_number_unsigned() || j.get<uint64_t>() <= INT64_MAX), ValueError,
           "model config: \"", key, "\" is ", j.dump().substr(0, 40), ", expected an integer");
  return j.get<int64_t>();
}

std::vector<int64_t> json_ints(const nlohmann::json& j, const std::string& key) {
  LS_CHECK(j.is_array(), ValueError, "model config: \"", key, "\" is ", j.dump().substr(0, 40),
           ", expected a list of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& v : j) out.push_back(json_int(v, key));
  return out;
}

ConfigReader::ConfigReader(std::string class_name, const nlohmann::json& config)
    : cls_(std::move(class_name)), c_(config), name_(config.value("name", "")) {}

void ConfigReader::only(const char* key, std::initializer_list<nlohmann::json> allowed) const {
  if (!c_.contains(key) || c_[key].is_null()) return;
  for (const nlohmann::json& a : allowed)
    if (c_[key] == a) return;
  std::string expected;
  for (const nlohmann::json& a : allowed) expected += (expected.empty() ? "" : " or ") + a.dump();
  throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, "=", c_[key].dump().substr(0, 60),
                                " is not supported by lockstep (supported: ", expected.empty() ? "null" : expected,
                                "); change the model or file an issue"));
}

int64_t ConfigReader::window(const char* key, int rank) const {
  const nlohmann::json& v = c_.at(key);
  if (!v.is_array()) return json_int(v, key);
  LS_CHECK(v.size() == static_cast<size_t>(rank), ValueError, "layer '", name_, "' (", cls_, "): ", key, "=",
           v.dump().substr(0, 60), " must be an integer or a list of ", rank, " integer", rank == 1 ? "" : "s",
           " (the layer has ", rank, " spatial dimension", rank == 1 ? "" : "s", ")");
  const int64_t n = json_int(v[0], key);
  for (const nlohmann::json& d : v)
    LS_CHECK(json_int(d, key) == n, ValueError, "layer '", name_, "' (", cls_, "): ", key, "=", v.dump(),
             " is not supported by lockstep (only equal sizes in both dimensions)");
  return n;
}

std::string ConfigReader::activation() const {
  const nlohmann::json a = c_.value("activation", nlohmann::json("linear"));
  LS_CHECK(a.is_string(), ValueError, "layer '", name_, "' (", cls_, "): activation ", a.dump().substr(0, 60),
           " is not supported by lockstep (only built-in activations by name)");
  return a == "linear" ? std::string() : a.get<std::string>();
}

InitializerRef ConfigReader::initializer(const char* key, const char* fallback) const {
  if (!c_.contains(key) || c_[key].is_null()) return InitializerRef(fallback);
  try {
    return initializers::from_config(c_[key]);
  } catch (const std::exception& e) {
    throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, ": ", e.what()));
  }
}

regularizers::RegularizerPtr ConfigReader::regularizer(const char* key) const {
  try {
    return regularizers::from_config(c_.value(key, nlohmann::json()));
  } catch (const std::exception& e) {
    throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, ": ", e.what()));
  }
}

}  // namespace detail

namespace layers {

namespace {
// A layer config's "dtype": a policy name, or Keras 3's serialised DTypePolicy object.
mixed_precision::DTypePolicy policy_from_config(const nlohmann::json& dtype) {
  if (dtype.is_object()) return dtype.at("config").at("name").get<std::string>();
  return dtype.get<std::string>();
}

// Layer class L's registration: its from_config, plus what every layer's config shares (an InputLayer's dtype is
// its input's, not a policy).
template <typename L>
Registry<LayerPtr>::Entry entry() {
  return {L::kClassName,
          [](const nlohmann::json& own) -> LayerPtr {
            if constexpr (std::is_same_v<L, InputLayer>) {
              return L::from_config(own);
            } else {
              const nlohmann::json c = complete_config(
                  make_message("layer '", own.value("name", ""), "' (", L::kClassName, ")"), base_params(), own);
              LayerPtr layer = L::from_config(c);
              if (c.contains("dtype")) layer->set_dtype_policy(policy_from_config(c["dtype"]));
              layer->set_trainable(c.value("trainable", true));
              return layer;
            }
          },
          {},
          L::params()};
}
}  // namespace

std::vector<Param> base_params() {
  return {Param::fixed("activity_regularizer", nullptr, "not implemented by lockstep"),
          {"trainable", true, "whether fit() updates the layer's weights"},
          {"dtype", nullptr, "the dtype policy: float32 or mixed_bfloat16 (None: the global policy)"},
          {"autocast", true, "lockstep casts a mixed policy's inputs always"},
          {"name", nullptr, "the layer's name; None makes a unique one from the class name"}};
}

const Registry<LayerPtr>& registry() {
  // Every layer class, once; a list rather than registrar objects (lockstep/keras/registry.h says why).
  static const Registry<LayerPtr> r("layer", {entry<InputLayer>(),
                                              entry<Reshape>(),
                                              entry<Flatten>(),
                                              entry<Conv2D>(),
                                              entry<MaxPooling2D>(),
                                              entry<AveragePooling2D>(),
                                              entry<GlobalAveragePooling2D>(),
                                              entry<GlobalMaxPooling2D>(),
                                              entry<Dense>(),
                                              entry<Dropout>(),
                                              entry<BatchNormalization>(),
                                              entry<LayerNormalization>(),
                                              entry<Activation>(),
                                              entry<Embedding>(),
                                              entry<Normalization>(),
                                              entry<LeakyReLU>(),
                                              entry<Rescaling>(),
                                              entry<Add>(),
                                              entry<Concatenate>(),
                                              entry<UpSampling2D>(),
                                              entry<Conv1D>(),
                                              entry<MaxPooling1D>(),
                                              entry<AveragePooling1D>(),
                                              entry<GlobalAveragePooling1D>(),
                                              entry<GlobalMaxPooling1D>()});
  return r;
}

LayerPtr from_config(const nlohmann::json& j) {
  const std::string cls = j.at("class_name");
  const nlohmann::json& c = j.at("config");
  const Registry<LayerPtr>::Entry* entry = registry().find(cls);
  LS_CHECK(entry, ValueError, "layer '", c.value("name", ""), "': ", registry().unsupported(cls));
  try {
    return entry->from_config(
        complete_config(make_message("layer '", c.value("name", ""), "' (", cls, ")"), entry->params, c));
  } catch (const ValueError& e) {  // a constructor's check (units > 0, a known activation) with the layer named
    if (std::string(e.what()).starts_with("layer '")) throw;
    throw ValueError(make_message("layer '", c.value("name", ""), "' (", cls, "): ", e.what()));
  }
}

nlohmann::json serialize(const Layer& layer, const Shape* input_shape) {
  nlohmann::json j = {{"module", "keras.layers"},
                      {"class_name", layer.class_name()},
                      {"config", layer.get_config()},
                      {"registered_name", nullptr}};
  // Keras records the build shape of layers that build something (weights, or Flatten's input spec).
  if (input_shape && (!layer.weights().empty() || layer.class_name() == "Flatten")) {
    std::vector<nlohmann::json> shape{nullptr};
    for (int64_t d : input_shape->dims()) shape.push_back(d);
    j["build_config"] = {{"input_shape", shape}};
  }
  return j;
}

}  // namespace layers
}  // namespace lockstep::keras
