// L1/L2 weight penalties.
#include "lockstep/keras/regularizers.h"

#include "lockstep/autograd/ops.h"

namespace lockstep::keras::regularizers {

namespace {
class L1L2Regularizer : public Regularizer {
 public:
  L1L2Regularizer(double l1, double l2) : l1_(l1), l2_(l2) {
    LS_CHECK(l1 >= 0 && l2 >= 0, ValueError, "regularization factors must be >= 0, got l1=", l1, " l2=", l2);
  }
  Tensor operator()(const Tensor& w) const override {
    Tensor penalty = zeros({}, w.dtype());
    if (l1_ > 0) penalty = penalty + reduce_sum(abs(w)) * l1_;
    if (l2_ > 0) penalty = penalty + nn::l2_loss(w) * (2 * l2_);  // = l2 * sum(w ** 2), in one pass over w
    return penalty;
  }
  nlohmann::json get_config() const override {
    // Keras 3's serialised form.
    auto object = [](const char* cls, nlohmann::json c) {
      return nlohmann::json{{"module", "keras.regularizers"}, {"class_name", cls}, {"config", std::move(c)}, {"registered_name", nullptr}};
    };
    if (l1_ == 0) return object("L2", {{"l2", l2_}});
    if (l2_ == 0) return object("L1", {{"l1", l1_}});
    return object("L1L2", {{"l1", l1_}, {"l2", l2_}});
  }

 private:
  double l1_, l2_;
};
}  // namespace

RegularizerPtr L1L2(double l1, double l2) { return std::make_shared<L1L2Regularizer>(l1, l2); }
RegularizerPtr L1(double l1) { return L1L2(l1, 0); }
RegularizerPtr L2(double l2) { return L1L2(0, l2); }

const Registry<RegularizerPtr>& registry() {
  static const Registry<RegularizerPtr> r(
      "regularizer",
      {{"L1", [](const nlohmann::json& c) { return L1(c.at("l1").get<double>()); }, {"l1"},
        {{"l1", 0.01, "the factor of the sum of absolute values"}}},
       {"L2", [](const nlohmann::json& c) { return L2(c.at("l2").get<double>()); }, {"l2"},
        {{"l2", 0.01, "the factor of the sum of squares"}}},
       {"L1L2", [](const nlohmann::json& c) { return L1L2(c.at("l1").get<double>(), c.at("l2").get<double>()); },
        {"l1_l2"},
        {{"l1", 0.0, "the factor of the sum of absolute values"}, {"l2", 0.0, "the factor of the sum of squares"}}}});
  return r;
}

RegularizerPtr from_config(const nlohmann::json& config) {
  if (config.is_null()) return nullptr;
  if (config.is_string()) return registry().get(config.get<std::string>(), {{"l1", 0.01}, {"l2", 0.01}});
  return registry().from_config(config.at("class_name").get<std::string>(), config.at("config"));
}

}  // namespace lockstep::keras::regularizers
