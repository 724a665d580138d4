// Registry<T>: the Keras classes of one kind (layers, losses, metrics, optimizers, schedules, activations,
// initializers, regularizers), each with the factory that makes it from its get_config(), the short names Keras
// also accepts ("adam", "mse") and its parameter table: every argument Keras' class takes, with Keras' default.
// Loading .keras and JSON models, compile() from strings, the CLI's choices and defaults, every "known: ..."
// message and the Python package's classes (their signatures are generated from the tables) read these
// registries, so that a class and its arguments are declared in one place (Keras' serialization_lib).
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

// The default of an argument Keras requires.
inline const nlohmann::json kRequired = nlohmann::json(nlohmann::json::value_t::discarded);

// One argument of a Keras class, as Keras' __init__ declares it. tests/keras/signatures_test.cc holds every table
// against Keras' own signatures (tests/golden/keras_signatures.json).
struct Param {
  std::string name;
  nlohmann::json default_value;  // Keras' default; kRequired for an argument Keras requires
  std::string doc;               // one line: what the argument does in lockstep
  // The values lockstep accepts, when it takes the argument only for Keras' sake (a constraint, a dilation rate
  // it does not implement): any other value is refused, naming the argument. Empty: any value.
  std::vector<nlohmann::json> only = {};

  bool required() const { return default_value.is_discarded(); }
  // An argument lockstep accepts only at Keras' default (and at the `also` values that mean the same).
  static Param fixed(std::string name, nlohmann::json default_value, std::string doc,
                     std::vector<nlohmann::json> also = {}) {
    also.insert(also.begin(), default_value);
    return {std::move(name), std::move(default_value), std::move(doc), std::move(also)};
  }
};

// A table as JSON, for the Python package and the docs: [{"name", "default" or "required", "doc", "only"?}].
inline nlohmann::json params_json(const std::vector<Param>& params) {
  nlohmann::json out = nlohmann::json::array();
  for (const Param& p : params) {
    nlohmann::json j = {{"name", p.name}, {"doc", p.doc}};
    if (p.required())
      j["required"] = true;
    else
      j["default"] = p.default_value;
    if (!p.only.empty()) j["only"] = p.only;
    out.push_back(std::move(j));
  }
  return out;
}

// `config` with every argument of `params` it leaves out set to its default (but None, which is left out: every
// reader takes a missing key as None, as Keras' from_config does), after checking it: a required
// argument present, an argument lockstep takes only at its default at that default. `owner` starts messages
// ("layer 'conv' (Conv2D)"). Keys that are not in the table are kept: a file may hold keys another Keras wrote.
inline nlohmann::json complete_config(const std::string& owner, const std::vector<Param>& params,
                                      nlohmann::json config) {
  if (config.is_null()) config = nlohmann::json::object();
  LS_CHECK(config.is_object(), ValueError, owner, ": the config must be a JSON object, got ", config.dump().substr(0, 60));
  for (const Param& p : params) {
    if (!config.contains(p.name)) {
      LS_CHECK(!p.required(), ValueError, owner, ": missing required argument '", p.name, "' (", p.doc, ")");
      if (!p.default_value.is_null()) config[p.name] = p.default_value;  // a reader takes a missing key as None
      continue;
    }
    if (p.only.empty()) continue;
    bool allowed = false;
    for (const nlohmann::json& value : p.only) allowed = allowed || config[p.name] == value;
    if (allowed) continue;
    std::string expected;
    for (const nlohmann::json& value : p.only) expected += (expected.empty() ? "" : " or ") + value.dump();
    throw ValueError(make_message(owner, ": ", p.name, "=", config[p.name].dump().substr(0, 60),
                                  " is not supported by lockstep (supported: ", expected,
                                  "); change the model or file an issue"));
  }
  return config;
}

template <typename T>
class Registry {
 public:
  struct Entry {
    // A constructor, not an aggregate: GCC 12 fails on an aggregate's defaulted vector<Param> member.
    Entry(std::string class_name, std::function<T(const nlohmann::json&)> from_config,
          std::vector<std::string> aliases = {}, std::vector<Param> params = {})
        : class_name(std::move(class_name)),
          from_config(std::move(from_config)),
          aliases(std::move(aliases)),
          params(std::move(params)) {}

    std::string class_name;                               // Keras' class name: "Adam", "Dense"
    std::function<T(const nlohmann::json&)> from_config;  // the object a complete config describes
    std::vector<std::string> aliases;                     // other names Keras accepts, in any case: "adam"
    std::vector<Param> params;                            // Keras' arguments, in Keras' order
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
    return e->from_config(complete_config(kind_ + " '" + e->class_name + "'", e->params, config));
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
    return e->from_config(complete_config(kind_ + " '" + e->class_name + "'", e->params, config));
  }

  // The default of argument `param` of class `class_name` (the CLI's flags read them); ValueError when either is
  // unknown or the argument has no default.
  const nlohmann::json& default_of(const std::string& class_name, const std::string& param) const {
    const Entry* e = find(class_name);
    if (!e) throw ValueError(unsupported(class_name));
    for (const Param& p : e->params)
      if (p.name == param && !p.required()) return p.default_value;
    throw ValueError(make_message(kind_, " '", e->class_name, "' has no argument '", param, "' with a default"));
  }

  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& kind() const { return kind_; }

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
