// Adam's and AdamW's update rule, as Keras 3 computes it, in one fused loop per variant.
#include "lockstep/keras/optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "lockstep/kernels/cuda/kernels.h"
#include "optimizers-impl.h"

namespace lockstep::keras::optimizers {

using detail::RuleOptimizer;

namespace {

class AdamOptimizer : public RuleOptimizer<AdamOptimizer> {
  friend class RuleOptimizer<AdamOptimizer>;

 public:
  // weight_decay 0 is Adam; another value, AdamW.
  explicit AdamOptimizer(AdamOptions o, double weight_decay = 0)
      : RuleOptimizer(o.name, o.learning_rate,
                  o.amsgrad ? std::vector<std::string>{"momentum", "velocity", "velocity_hat"}
                            : std::vector<std::string>{"momentum", "velocity"}),
        o_(std::move(o)),
        weight_decay_(weight_decay) {
    LS_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, ValueError,
             "AdamW: weight_decay must be a number >= 0, got ", weight_decay);
  }
  std::string class_name() const override { return weight_decay_ != 0 ? "AdamW" : "Adam"; }
  std::vector<std::vector<std::string>> keras_slot_groups() const override {
    if (o_.amsgrad) return {{"momentum", "velocity"}, {"velocity_hat"}};  // velocity_hat is added last, by itself
    return Optimizer::keras_slot_groups();
  }
  nlohmann::json get_config() const override {
    auto c = Optimizer::get_config();
    c["beta_1"] = o_.beta_1;
    c["beta_2"] = o_.beta_2;
    c["epsilon"] = o_.epsilon;
    c["amsgrad"] = o_.amsgrad;
    if (weight_decay_ != 0) c["weight_decay"] = weight_decay_;
    return c;
  }

 private:
  template <typename T>
  void run(T* __restrict w, const T* __restrict g, T* const* s, int64_t n, const Step& st) const {
    if (weight_decay_ != 0) {
      // Keras' _apply_weight_decay, in the variable's dtype and order: w -= w * weight_decay * learning_rate.
      LS_CHECK(!st.on_gpu, UnimplementedError, "AdamW's weight decay on the GPU is not implemented by lockstep yet; "
               "train with AdamW on the CPU, or use Adam on the GPU");
      const T decay = static_cast<T>(weight_decay_), lr = static_cast<T>(st.learning_rate);
      for (int64_t i = 0; i < n; ++i) w[i] -= w[i] * decay * lr;
    }
    const double t = static_cast<double>(st.t);
    const T alpha =
                static_cast<T>(st.learning_rate * std::sqrt(1 - std::pow(o_.beta_2, t)) / (1 - std::pow(o_.beta_1, t))),
            one_minus_b1 = static_cast<T>(1 - o_.beta_1), one_minus_b2 = static_cast<T>(1 - o_.beta_2),
            eps = static_cast<T>(o_.epsilon);
    T *__restrict m = s[0], *__restrict v = s[1], *__restrict vhat = s[2];
#if LOCKSTEP_WITH_CUDA
    if (st.on_gpu)
      return kernels::cuda::adam_update<T>(n, w, g, m, v, o_.amsgrad ? vhat : nullptr, alpha, one_minus_b1, one_minus_b2,
                                           eps);
#endif
    if (o_.amsgrad) {
      for (int64_t i = 0; i < n; ++i) {
        m[i] += (g[i] - m[i]) * one_minus_b1;
        v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
        vhat[i] = std::max(vhat[i], v[i]);
        w[i] -= m[i] * alpha / (std::sqrt(vhat[i]) + eps);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        m[i] += (g[i] - m[i]) * one_minus_b1;
        v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
        w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
      }
    }
  }
  AdamOptions o_;
  double weight_decay_;
};

}  // namespace

std::shared_ptr<Optimizer> Adam(AdamOptions options) {
  return std::make_shared<AdamOptimizer>(std::move(options));
}
std::shared_ptr<Optimizer> AdamW(AdamWOptions o) {
  LS_CHECK(o.weight_decay > 0, ValueError, "AdamW: weight_decay must be > 0 (0 is Adam: use Adam), got ",
           o.weight_decay);
  return std::make_shared<AdamOptimizer>(AdamOptions{.learning_rate = std::move(o.learning_rate),
                                                     .beta_1 = o.beta_1,
                                                     .beta_2 = o.beta_2,
                                                     .epsilon = o.epsilon,
                                                     .amsgrad = o.amsgrad,
                                                     .name = std::move(o.name)},
                                         o.weight_decay);
}

std::vector<Param> adam_params() {
  const AdamOptions d;
  return detail::with_base({{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
                            {"beta_1", d.beta_1, "the first moment's decay"},
                            {"beta_2", d.beta_2, "the second moment's decay"},
                            {"epsilon", d.epsilon, "added to the denominator"},
                            {"amsgrad", d.amsgrad, "AMSGrad: divide by the largest second moment yet"}});
}

std::shared_ptr<Optimizer> adam_from_config(const nlohmann::json& c) {
  return Adam({.learning_rate = detail::learning_rate_of(c),
               .beta_1 = c.at("beta_1").get<double>(),
               .beta_2 = c.at("beta_2").get<double>(),
               .epsilon = c.at("epsilon").get<double>(),
               .amsgrad = c.at("amsgrad").get<bool>(),
               .name = detail::name_of(c, "Adam")});
}

std::vector<Param> adamw_params() {
  const AdamWOptions d;
  return detail::with_base(
      {{"learning_rate", d.learning_rate.to_json(), "a number or a LearningRateSchedule"},
       {"weight_decay", d.weight_decay, "each step removes weight_decay * learning_rate of each weight"},
       {"beta_1", d.beta_1, "the first moment's decay"},
       {"beta_2", d.beta_2, "the second moment's decay"},
       {"epsilon", d.epsilon, "added to the denominator"},
       {"amsgrad", d.amsgrad, "AMSGrad: divide by the largest second moment yet"}});
}

std::shared_ptr<Optimizer> adamw_from_config(const nlohmann::json& c) {
  return AdamW({.learning_rate = detail::learning_rate_of(c),
                .weight_decay = c.at("weight_decay").get<double>(),
                .beta_1 = c.at("beta_1").get<double>(),
                .beta_2 = c.at("beta_2").get<double>(),
                .epsilon = c.at("epsilon").get<double>(),
                .amsgrad = c.at("amsgrad").get<bool>(),
                .name = detail::name_of(c, "AdamW")});
}

}  // namespace lockstep::keras::optimizers
