// Private helpers of the cluster floor: quoting user text into one-line messages and throwing them.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/core/error.h"

namespace lockstep::distribute::cluster_impl {

// A JSON value on one line, control characters escaped and bad UTF-8 replaced, to show in a message.
inline std::string show(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// User text as a quoted JSON string literal, so a message that shows it stays on one line.
inline std::string quote(const std::string& s) {
  return show(nlohmann::json(s));
}

// "an object", "a string", "null": a JSON value's type for "is ..., expected ..." messages.
inline std::string a_type(const nlohmann::json& j) {
  const std::string t = j.type_name();
  if (t == "null") return t;
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

// Throws ValueError with the parts joined; any stray line break becomes a space (messages are one line).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::string m = make_message(parts...);
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  throw ValueError(m);
}

}  // namespace lockstep::distribute::cluster_impl
