// SGD's update rule, as Keras 3 computes it, in one fused loop per variant.
#include "lockstep/keras/optimizers/sgd.h"

#include "lockstep/kernels/cuda/kernels.h"
#include "optimizers-impl.h"

namespace lockstep::keras::optimizers {

using detail::RuleOptimizer;

namespace {

class SGDOptimizer : public RuleOptimizer<SGDOptimizer> {
  friend class RuleOptimizer<SGDOptimizer>;

 public:
  explicit SGDOptimizer(SGDOptions o)
      : RuleOptimizer(o.name, o.learning_rate,
                  o.momentum != 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{}),
        o_(std::move(o)) {
    LS_CHECK(o_.momentum >= 0 && o_.momentum <= 1, ValueError, "SGD: momentum must be a float between [0, 1], got ",
             o_.momentum);
  }
  std::string class_name() const override { return "SGD"; }
  nlohmann::json get_config() const override {
    auto c = Optimizer::get_config();
    c["momentum"] = o_.momentum;
    c["nesterov"] = o_.nesterov;
    return c;
  }

 private:
  template <typename T>
  void run(T* w, const T* g, T* const* s, int64_t n, const Step& st) const {
    const T lr = static_cast<T>(st.learning_rate), mu = static_cast<T>(o_.momentum);
#if LOCKSTEP_WITH_CUDA
    if (st.on_gpu) return kernels::cuda::sgd_update<T>(n, w, g, o_.momentum == 0 ? nullptr : s[0], lr, mu, o_.nesterov);
#endif
    if (o_.momentum == 0) {
      for (int64_t i = 0; i < n; ++i) w[i] -= g[i] * lr;
    } else if (o_.nesterov) {
      T* m = s[0];
      for (int64_t i = 0; i < n; ++i) {
        m[i] = -g[i] * lr + m[i] * mu;
        w[i] += -g[i] * lr + m[i] * mu;
      }
    } else {
      T* m = s[0];
      for (int64_t i = 0; i < n; ++i) {
        m[i] = -g[i] * lr + m[i] * mu;
        w[i] += m[i];
      }
    }
  }
  SGDOptions o_;
};

}  // namespace

std::shared_ptr<Optimizer> SGD(SGDOptions options) {
  return std::make_shared<SGDOptimizer>(std::move(options));
}

std::vector<Param> sgd_params() {
  const SGDOptions d;
  return detail::with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                            {"momentum", d.momentum, "the velocity's decay; 0 is plain SGD"},
                            {"nesterov", d.nesterov, "Nesterov's momentum"}});
}

std::shared_ptr<Optimizer> sgd_from_config(const nlohmann::json& c) {
  return SGD({.learning_rate = detail::learning_rate_of(c),
              .momentum = c.at("momentum").get<double>(),
              .nesterov = c.at("nesterov").get<bool>(),
              .name = detail::name_of(c, "SGD")});
}

}  // namespace lockstep::keras::optimizers
