// lockstep._lockstep._registry_tables(): every C++ registry's classes with their parameter tables, as JSON. The
// Python package generates its tf.keras classes and their signatures from it (lockstep/keras/_registry.py), so a
// class and its arguments are declared once, in C++ (lockstep/keras/registry.h).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::python {
namespace {

// {class name: {"aliases": [...], "params": [...]}} for one registry, in registration order (a JSON array of
// pairs would keep it too; Python's dicts keep insertion order and nlohmann's ordered_json writes it).
template <typename T>
nlohmann::ordered_json table(const keras::Registry<T>& registry) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& e : registry.entries())
    out[e.class_name] = {{"aliases", e.aliases}, {"params", nlohmann::ordered_json(keras::params_json(e.params))}};
  return out;
}

}  // namespace

void bind_registries(nb::module_& m) {
  m.def("_registry_tables", [] {
    namespace k = keras;
    nlohmann::ordered_json out = {
        {"layer", table(k::layers::registry())},
        {"layer_base", nlohmann::ordered_json(k::params_json(k::layers::base_params()))},
        {"loss", table(k::losses::registry())},
        {"metric", table(k::metrics::registry())},
        {"optimizer", table(k::optimizers::registry())},
        {"learning-rate schedule", table(k::optimizers::schedules::registry())},
        {"initializer", table(k::initializers::registry())},
        {"regularizer", table(k::regularizers::registry())},
        {"callback", table(k::callbacks::registry())},
        {"model method",
         {{"fit", k::params_json(k::fit_params())},
          {"evaluate", k::params_json(k::evaluate_params())},
          {"predict", k::params_json(k::predict_params())}}},
    };
    return out.dump();
  });
  // The callbacks are made here, not through a per-kind module: their registry's configs hold no objects.
  m.def("_callback_from_config", [](const std::string& class_name, const std::string& config) {
    return keras::callbacks::registry().from_config(class_name, nlohmann::json::parse(config));
  });
}

}  // namespace lockstep::python
