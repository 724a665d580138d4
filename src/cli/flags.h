// Private to the lockstep binary: numeric flags read exactly and checked, shared by the subcommands.
#pragma once
#include <charconv>
#include <optional>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::cli {

// Text from the command line or the environment, cut short enough to quote in a one-line error.
inline std::string quote(const std::string& text) {
  return "'" + (text.size() > 24 ? text.substr(0, 20) + "..." : text) + "'";
}

// Reads all of `text` as a decimal number for which `ok` holds (NaN fails any comparison).
template <typename T, typename Ok> std::optional<T> parse_number(const std::string& text, Ok ok) {
  T v{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !ok(v)) return std::nullopt;
  return v;
}

// A numeric flag read with parse_number rather than CLI11's conversion, which turns an integer too large
// into INT64_MAX, reads "010" as octal, lets "nan" pass as positive and quotes its limits in 300 digits.
// Every value given is checked, the last one kept.
template <typename T, typename Ok>
void add_number(CLI::App* cmd, const std::string& flag, T& value, Ok ok, const std::string& range,
                const std::string& help) {
  auto check = [ok, range](std::string& text) {
    return parse_number<T>(text, ok) ? std::string() : quote(text) + " is not " + range;
  };
  auto set = [&value, ok](const std::string& text) { value = *parse_number<T>(text, ok); };
  cmd->add_option_function<std::string>(flag, set, help + " (" + range + ")")
      ->check(CLI::Validator(check, ""))
      ->type_name(std::is_integral_v<T> ? "INT" : "NUMBER");
}

// --gradient-compression none|bfloat16 into `value`; gradient_compression() turns it into the option.
inline void add_gradient_compression_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--gradient-compression", value,
                  "none | bfloat16: the type gradients are all-reduced in (bfloat16 halves the bytes sent)")
      ->check(CLI::IsMember({"none", "bfloat16"}));
}
inline distribute::GradientCompression gradient_compression(const std::string& value) {
  return value == "bfloat16" ? distribute::GradientCompression::BFLOAT16 : distribute::GradientCompression::NONE;
}

// --dtype-policy float32|mixed_bfloat16 into `value`: the Keras policy set before the model is built.
inline void add_dtype_policy_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--dtype-policy", value,
                  "float32 | mixed_bfloat16: Keras' mixed-precision policy (bfloat16 compute, float32 variables)")
      ->check(CLI::IsMember({"float32", "mixed_bfloat16"}));
}

}  // namespace lockstep::cli
