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
    if (l2_ > 0) penalty = penalty + reduce_sum(square(w)) * l2_;
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

RegularizerPtr from_config(const nlohmann::json& config) {
  if (config.is_null()) return nullptr;
  const std::string cls = config.is_string() ? config.get<std::string>() : config.at("class_name").get<std::string>();
  LS_CHECK(cls == "L1" || cls == "L2" || cls == "L1L2" || cls == "l1" || cls == "l2" || cls == "l1_l2", ValueError,
           "regularizer '", cls, "' is not supported (lockstep has L1, L2 and L1L2)");
  if (config.is_string()) return cls == "l1" ? L1(0.01) : cls == "l2" ? L2(0.01) : L1L2(0.01, 0.01);
  const auto& c = config.at("config");
  return L1L2(c.value("l1", 0.0), c.value("l2", 0.0));
}

}  // namespace lockstep::keras::regularizers
