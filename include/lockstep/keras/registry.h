// Registry<T>: the Keras classes of one kind (layers, losses, metrics, optimizers, schedules, activations,
// initializers, regularizers), each with the factory that makes it from its get_config() and the short names Keras
// also accepts ("adam", "mse"). Loading .keras and JSON models, compile() from strings, the CLI's choices and every
// "known: ..." message read these registries, so that a class is named in one place (Keras' serialization_lib).
//
// Each kind's registry() is a function-local static defined in that kind's own .cc file and built, on first use,
// from a list written there. There are no self-registering static objects on purpose: lockstep's layers are static
// libraries, whose object files the linker drops when nothing refers to them, so a registrar alone in its file
// would silently vanish; and static objects of different files initialise in no fixed order, so a registry read
// during static initialisation could be half-filled. A list in the kind's .cc is linked whenever the kind is used,
// and it names each class's factory, which links a class kept in a file of its own (layers::UpSampling2D); the test
// comparing the registries with docs/api.md catches a class left out of the list.
#pragma once
#include <cctype>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/core/error.h"

namespace lockstep::keras {

// "a | b | c" from {"a", "b", "c"} and " | ".
inline std::string join_names(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

template <typename T>
class Registry {
 public:
  struct Entry {
    std::string class_name;                               // Keras' class name: "Adam", "Dense"
    std::function<T(const nlohmann::json&)> from_config;  // the object a config ({} = defaults) describes
    std::vector<std::string> aliases = {};                // other names Keras accepts, in any case: "adam"
  };

  // `kind` names the kind in messages: "optimizer", "layer".
  Registry(std::string kind, std::vector<Entry> entries) : kind_(std::move(kind)), entries_(std::move(entries)) {}

  // The entry called `name`: by its class name, or by an alias in any case; null when none is.
  const Entry* find(const std::string& name) const {
    for (const Entry& e : entries_)
      if (e.class_name == name) return &e;
    for (const Entry& e : entries_)
      for (const std::string& alias : e.aliases)
        if (lower(alias) == lower(name)) return &e;
    return nullptr;
  }

  // Keras' deserialize: the object of class `class_name` (or an alias) made from `config`. ValueError listing
  // names() for a class lockstep lacks.
  T from_config(const std::string& class_name, const nlohmann::json& config) const {
    const Entry* e = find(class_name);
    if (!e) throw ValueError(unsupported(class_name));
    return e->from_config(config);
  }

  // Keras' get(identifier): the object `identifier` names, with default options or those `config` holds (the
  // factories read only the keys they know). ValueError listing identifiers() for an unknown one.
  T get(const std::string& identifier, const nlohmann::json& config = nlohmann::json::object()) const {
    const Entry* e = find(identifier);
    if (!e) {
      std::string valid;
      for (const std::string& name : identifiers()) valid += (valid.empty() ? "'" : ", '") + name + "'";
      throw ValueError(
          make_message("Could not interpret ", kind_, " identifier: '", identifier, "'. Valid names: ", valid, "."));
    }
    return e->from_config(config);
  }

  // "<kind> class 'X' is not supported by lockstep (it has A, B, C)".
  std::string unsupported(const std::string& class_name) const {
    return make_message(kind_, " class '", class_name, "' is not supported by lockstep (it has ",
                        join_names(names(), ", "), ")");
  }

  // The class names, in registration order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.class_name);
    return out;
  }
  // The names get() lists: each entry's aliases, or its class name when it has none (the CLI's choices).
  std::vector<std::string> identifiers() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_)
      if (e.aliases.empty())
        out.push_back(e.class_name);
      else
        out.insert(out.end(), e.aliases.begin(), e.aliases.end());
    return out;
  }

 private:
  static std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace lockstep::keras
