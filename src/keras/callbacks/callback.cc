// The base of every callback: the logs its hooks receive.
#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras {

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = value;
      return;
    }
  items_.emplace_back(key, value);
}

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace lockstep::keras
