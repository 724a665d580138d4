// Adagrad's update rule, as Keras 3 computes it: accumulator += g^2; w -= lr * g / sqrt(accumulator + epsilon).
#include "lockstep/keras/optimizers/adagrad.h"

#include <cmath>

#include "lockstep/kernels/cuda/kernels.h"
#include "optimizers-impl.h"

namespace lockstep::keras::optimizers {

using detail::RuleOptimizer;

namespace {

class AdagradOptimizer : public RuleOptimizer<AdagradOptimizer> {
  friend class RuleOptimizer<AdagradOptimizer>;

 public:
  // Keras builds the accumulators with initializers.Constant(initial_accumulator_value).
  explicit AdagradOptimizer(AdagradOptions o)
      : RuleOptimizer(o.name, o.learning_rate, {"accumulator"}, o.initial_accumulator_value), o_(std::move(o)) {
    LS_CHECK(std::isfinite(o_.initial_accumulator_value) && o_.initial_accumulator_value >= 0, ValueError,
             "Adagrad: initial_accumulator_value must be a number >= 0, got ", o_.initial_accumulator_value);
  }
  std::string class_name() const override { return "Adagrad"; }
  nlohmann::json get_config() const override {
    auto c = Optimizer::get_config();
    c["initial_accumulator_value"] = o_.initial_accumulator_value;
    c["epsilon"] = o_.epsilon;
    return c;
  }

 private:
  template <typename T>
  void run(T* __restrict w, const T* __restrict g, T* const* s, int64_t n, const Step& st) const {
    const T lr = static_cast<T>(st.learning_rate), eps = static_cast<T>(o_.epsilon);
    T* __restrict a = s[0];
#if LOCKSTEP_WITH_CUDA
    if (st.on_gpu) return kernels::cuda::adagrad_update<T>(n, w, g, a, lr, eps);
#endif
    for (int64_t i = 0; i < n; ++i) {
      a[i] += g[i] * g[i];
      w[i] -= lr * g[i] / std::sqrt(a[i] + eps);
    }
  }
  AdagradOptions o_;
};

}  // namespace

std::shared_ptr<Optimizer> Adagrad(AdagradOptions options) {
  return std::make_shared<AdagradOptimizer>(std::move(options));
}

std::vector<Param> adagrad_params() {
  const AdagradOptions d;
  return detail::with_base(
      {{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
       {"initial_accumulator_value", d.initial_accumulator_value, "where each squared gradients' sum starts; >= 0"},
       {"epsilon", d.epsilon, "added to the squared gradients' sum, under the square root"}});
}

std::shared_ptr<Optimizer> adagrad_from_config(const nlohmann::json& c) {
  return Adagrad({.learning_rate = detail::learning_rate_of(c),
                  .initial_accumulator_value = c.at("initial_accumulator_value").get<double>(),
                  .epsilon = c.at("epsilon").get<double>(),
                  .name = detail::name_of(c, "Adagrad")});
}

}  // namespace lockstep::keras::optimizers
