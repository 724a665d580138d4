// What the optimizers' update rules share: the base that forwards both update_step overloads to one rule.
#pragma once
#include <cstdint>

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

}  // namespace lockstep::keras::optimizers::detail
