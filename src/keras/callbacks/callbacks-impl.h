// What several callbacks share: the rule for "improved" of a monitored log (EarlyStopping, ReduceLROnPlateau,
// ModelCheckpoint).
#pragma once
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"
#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::detail {

// "auto" mode: accuracy-like quantities improve upwards, everything else downwards (Keras' rule).
inline bool improves_upward(const std::string& mode, const std::string& monitor) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  LS_CHECK(mode == "auto", ValueError, "mode must be \"auto\", \"min\" or \"max\", got \"", mode, "\"");
  return monitor.find("acc") != std::string::npos || monitor.rfind("fmeasure") != std::string::npos;
}

// Tracks the best value of a monitored quantity (EarlyStopping and ModelCheckpoint share the rule).
struct Monitor {
  std::string key;
  bool upward;
  double min_delta;
  double best;
  Monitor(std::string k, const std::string& mode, double delta)
      : key(std::move(k)), upward(improves_upward(mode, key)), min_delta(std::abs(delta)),
        best(upward ? -INFINITY : INFINITY) {}
  std::optional<double> read(const Logs& logs) const {
    std::optional<double> v = logs.get(key);
    if (!v) {
      std::string have;
      for (const auto& [k, x] : logs.items()) have += (have.empty() ? "" : ", ") + k;
      log(LogLevel::warning, "monitored quantity '", key, "' is not in the logs (available: ", have, ")");
    }
    return v;
  }
  bool improved(double v) const { return upward ? v - min_delta > best : v + min_delta < best; }
};

}  // namespace lockstep::keras::detail
