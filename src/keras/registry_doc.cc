// registries_markdown(): one section per registry, one table per class, from the registries' parameter tables.
#include "lockstep/keras/registry_doc.h"

#include <sstream>

#include "lockstep/keras/activations.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {
namespace {

// A default as Python writes it: None, True, 'valid', (1, 1).
std::string python_value(const nlohmann::json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  if (v.is_array()) {
    std::string out;
    for (const nlohmann::json& e : v) out += (out.empty() ? "" : ", ") + python_value(e);
    return "(" + out + (v.size() == 1 ? ",)" : ")");
  }
  if (v.is_object()) return v.contains("class_name") ? v["class_name"].get<std::string>() : v.dump();
  return v.dump();
}

void table(std::ostringstream& out, const std::vector<Param>& params) {
  if (params.empty()) {
    out << "No arguments.\n\n";
    return;
  }
  out << "| argument | default | in lockstep |\n| --- | --- | --- |\n";
  for (const Param& p : params) {
    std::string doc = p.doc;
    if (!p.only.empty()) {
      std::string values;
      for (const nlohmann::json& v : p.only) values += (values.empty() ? "" : ", ") + python_value(v);
      doc += " (only " + values + ")";
    }
    out << "| `" << p.name << "` | " << (p.required() ? "required" : "`" + python_value(p.default_value) + "`")
        << " | " << doc << " |\n";
  }
  out << "\n";
}

template <typename T>
void section(std::ostringstream& out, const std::string& title, const std::string& module, const Registry<T>& registry,
             const std::vector<Param>& base = {}) {
  out << "## " << title << "\n\n";
  if (!base.empty()) {
    out << "Every one also takes these keyword arguments (of `" << module << "`'s base class):\n\n";
    table(out, base);
  }
  for (const auto& e : registry.entries()) {
    out << "### " << e.class_name << "\n\n`" << module << "." << e.class_name << "`";
    if (!e.aliases.empty()) out << "; by name: " << join_names(e.aliases, ", ");
    out << "\n\n";
    table(out, e.params);
  }
}

}  // namespace

std::string registries_markdown() {
  std::ostringstream out;
  out << "# The Keras classes lockstep has\n\n"
         "Written by `lockstep classes` (`make docs`) from the C++ registries, where each class and its arguments "
         "are declared once (keras/registry.h); do not edit by hand. Each argument is Keras 3's, with Keras' "
         "default (tests/golden/keras_signatures.json holds them to TensorFlow 2.21's Keras). \"only\" lists the "
         "values lockstep accepts of an argument it does not implement: any other is a ValueError naming it. The "
         "callbacks listed are those made from arguments alone; LearningRateScheduler and LambdaCallback, which "
         "take functions, are in docs/api.md.\n\n";
  section(out, "Layers", "tf.keras.layers", layers::registry(), layers::base_params());
  section(out, "Losses", "tf.keras.losses", losses::registry());
  section(out, "Metrics", "tf.keras.metrics", metrics::registry());
  section(out, "Optimizers", "tf.keras.optimizers", optimizers::registry());
  section(out, "Learning-rate schedules", "tf.keras.optimizers.schedules", optimizers::schedules::registry());
  section(out, "Initializers", "tf.keras.initializers", initializers::registry());
  section(out, "Regularizers", "tf.keras.regularizers", regularizers::registry());
  section(out, "Callbacks", "tf.keras.callbacks", callbacks::registry());
  out << "## Activations\n\nBy name (`activation=\"relu\"`, `tf.keras.activations.get`): "
      << join_names(activations::registry().names(), ", ") << ".\n";
  return out.str();
}

}  // namespace lockstep::keras
