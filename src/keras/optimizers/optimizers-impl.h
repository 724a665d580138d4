// What the optimizers share: the base that forwards both update_step overloads to one rule, and the readers of a
// complete config that every optimizer's from_config uses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/keras/optimizers/optimizer.h"

namespace lockstep::keras::optimizers::detail {

// Forwards both update_step overloads to Derived::run<T>, so each optimizer states its rule once.
template <typename Derived> class RuleOptimizer : public Optimizer {
 public:
  using Optimizer::Optimizer;

 protected:
  void update_step(float* w, const float* g, float* const* s, int64_t n, const Step& st) const override {
    static_cast<const Derived*>(this)->run(w, g, s, n, st);
  }
  void update_step(double* w, const double* g, double* const* s, int64_t n, const Step& st) const override {
    static_cast<const Derived*>(this)->run(w, g, s, n, st);
  }
};

// `own` (an optimizer's own arguments, in Keras' order) followed by the arguments every Keras optimizer takes after
// its own, which lockstep takes at Keras' defaults only, and the name (optimizer.cc).
std::vector<Param> with_base(std::vector<Param> own);

// A complete config's learning rate: a number or a schedule's config.
inline LearningRate learning_rate_of(const nlohmann::json& c) { return LearningRate::from_json(c.at("learning_rate")); }

// A complete config's name: `class_name` when None.
inline std::string name_of(const nlohmann::json& c, const std::string& class_name) {
  return c.contains("name") && !c["name"].is_null() ? c["name"].get<std::string>() : class_name;
}

}  // namespace lockstep::keras::optimizers::detail
