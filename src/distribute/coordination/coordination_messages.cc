// How coordination messages name tasks and durations, how a configuration fingerprint that differs from
// the chief's is described (the first differing key, or the first differing variable with its shape and
// dtype), and gRPC's own log kept out of them.
#include <grpc/support/log.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>

#include "coordination-impl.h"
#include "lockstep/core/error.h"

namespace lockstep::distribute {

namespace {

using nlohmann::json;

bool is_variable(const json& value) {
  return value.is_object() && value.contains("name");
}

std::string text_of(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "shape [784, 128], float32" of a variable entry.
std::string variable_details(const json& variable) {
  std::string details;
  if (variable.contains("shape")) {
    std::string shape;
    for (const json& dim : variable["shape"]) shape += (shape.empty() ? "" : ", ") + dim.dump();
    details = "shape [" + shape + "]";
  }
  if (variable.contains("dtype")) details += (details.empty() ? "" : ", ") + text_of(variable["dtype"]);
  return details;
}

// "dense/kernel (shape [784, 128], float32)" for a variable entry; the JSON text for anything else.
std::string describe(const json& value) {
  if (!is_variable(value)) return value.dump();
  const std::string details = variable_details(value);
  return text_of(value["name"]) + (details.empty() ? "" : " (" + details + ")");
}

struct Sides {
  const std::string& chief;
  const std::string& task;
  std::string differ(const std::string& what, const std::string& a, const std::string& b,
                     const char* verb = "is") const {
    return what + " " + verb + " " + a + " on " + chief + " but " + b + " on " + task;
  }
};

std::string difference(const json& a, const json& b, const std::string& path, const Sides& sides);

std::string array_difference(const json& a, const json& b, const std::string& path, const Sides& sides) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) continue;
    const bool variables = is_variable(a[i]) && is_variable(b[i]);
    if (variables && a[i]["name"] == b[i]["name"]) {
      return sides.differ("variable " + text_of(a[i]["name"]), variable_details(a[i]), variable_details(b[i]), "has");
    }
    if (variables) return sides.differ(path + " entry " + std::to_string(i), describe(a[i]), describe(b[i]));
    return difference(a[i], b[i], path + "[" + std::to_string(i) + "]", sides);
  }
  const json& longer = a.size() > b.size() ? a : b;
  return make_message(path, " has ", a.size(), " entries on ", sides.chief, " but ", b.size(), " on ", sides.task,
                      " (first extra: ", describe(longer[std::min(a.size(), b.size())]), ")");
}

std::string object_difference(const json& a, const json& b, const std::string& path, const Sides& sides) {
  std::vector<std::string> keys;
  // The version first: a different lockstep explains every other difference.
  if (a.contains("lockstep_version") || b.contains("lockstep_version")) keys.push_back("lockstep_version");
  for (const auto& [key, unused] : a.items()) keys.push_back(key);
  for (const auto& [key, unused] : b.items()) {
    if (!a.contains(key)) keys.push_back(key);
  }
  for (const std::string& key : keys) {
    const std::string where = path.empty() ? key : path + "." + key;
    if (!b.contains(key)) return sides.differ(where, a[key].dump(), "missing");
    if (!a.contains(key)) return sides.differ(where, "missing", b[key].dump());
    if (std::string d = difference(a[key], b[key], where, sides); !d.empty()) return d;
  }
  return "";
}

std::string difference(const json& a, const json& b, const std::string& path, const Sides& sides) {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) return object_difference(a, b, path, sides);
  if (a.is_array() && b.is_array()) return array_difference(a, b, path, sides);
  return sides.differ(path.empty() ? "the configuration fingerprint" : path, a.dump(), b.dump());
}

// gRPC logs "assertion failed: ..." just before it aborts: the one line worth keeping, as nothing else
// would explain the crash.
void drop_grpc_log(gpr_log_func_args* args) {
  if (std::string_view(args->message).starts_with("assertion failed"))
    std::fprintf(stderr, "gRPC %s:%d: %s\n", args->file, args->line, args->message);
}

}  // namespace

void quiet_grpc_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("GRPC_VERBOSITY")) gpr_set_log_function(drop_grpc_log);
  });
}

TaskLabels::TaskLabels(const CoordinationOptions& options)
    : names_(options.task_names), addresses_(options.task_addresses), service_address_(options.service_address) {}

std::string TaskLabels::name(int rank) const {
  if (rank >= 0 && static_cast<size_t>(rank) < names_.size()) return names_[static_cast<size_t>(rank)];
  return "task:" + std::to_string(rank);
}

std::string TaskLabels::label(int rank) const {
  if (rank >= 0 && static_cast<size_t>(rank) < addresses_.size() && !addresses_[static_cast<size_t>(rank)].empty()) {
    return name(rank) + " at " + addresses_[static_cast<size_t>(rank)];
  }
  return rank == 0 ? service_label() : name(rank);
}

std::string TaskLabels::service_label() const {
  return name(0) + " at " + service_address_;
}

std::string format_seconds(std::chrono::milliseconds duration) {
  char text[32];
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::string fingerprint_difference(const std::string& chief_fingerprint, const std::string& task_fingerprint,
                                   const std::string& chief_name, const std::string& task_name) {
  if (chief_fingerprint == task_fingerprint) return "";
  const Sides sides{chief_name, task_name};
  const json a = json::parse(chief_fingerprint, nullptr, false);
  const json b = json::parse(task_fingerprint, nullptr, false);
  if (a.is_discarded() || b.is_discarded()) {
    return sides.differ("the configuration fingerprint", "'" + chief_fingerprint + "'", "'" + task_fingerprint + "'");
  }
  // Compared as JSON, so that equal objects written differently (key order, spacing) match.
  return difference(a, b, "", sides);
}

}  // namespace lockstep::distribute
