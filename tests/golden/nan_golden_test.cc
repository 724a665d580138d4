// The Keras losses on NaN and the infinities against Keras itself (nan_golden.json's "losses", by
// make_nan_golden.py): per-example values and gradients, NaN and the infinities in exactly Keras' places. The ops
// beneath them are checked the same way by the op harness.
#include "nan_golden.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "lockstep/autograd/ops.h"
#include "lockstep/keras/losses.h"

namespace lockstep {
namespace {

using golden::json;
namespace kl = keras::losses;
using LossFn = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::map<std::string, LossFn>& losses() {
  static const std::map<std::string, LossFn> table = {
      {"sparse_categorical_crossentropy_logits",
       [](const Tensor& t, const Tensor& p) { return kl::sparse_categorical_crossentropy(t, p, true); }},
      {"sparse_categorical_crossentropy_probabilities",
       [](const Tensor& t, const Tensor& p) { return kl::sparse_categorical_crossentropy(t, p); }},
      {"categorical_crossentropy_logits",
       [](const Tensor& t, const Tensor& p) { return kl::categorical_crossentropy(t, p, true); }},
      {"categorical_crossentropy_probabilities",
       [](const Tensor& t, const Tensor& p) { return kl::categorical_crossentropy(t, p); }},
      {"binary_crossentropy_logits",
       [](const Tensor& t, const Tensor& p) { return kl::binary_crossentropy(t, p, true); }},
      {"binary_crossentropy_probabilities",
       [](const Tensor& t, const Tensor& p) { return kl::binary_crossentropy(t, p); }},
      {"mean_squared_error", kl::mean_squared_error},
      {"mean_absolute_error", kl::mean_absolute_error},
  };
  return table;
}

TEST(NanGolden, LossesPropagateNanAndInfinitiesAsKeras) {
  const json doc = golden::load_golden("nan_golden.json");
  ASSERT_EQ(doc["losses"].size(), losses().size());
  for (const json& c : doc["losses"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    ASSERT_TRUE(losses().count(name)) << "no loss for the case " << name;
    for (DType dtype : {DType::float32, DType::float64}) {
      const json& keras = c[std::string(dtype_name(dtype))];
      const std::string what = name + " in " + std::string(dtype_name(dtype));
      std::vector<Tensor> x;
      for (const json& t : c["inputs"]) x.push_back(golden::special_tensor(t, dtype));
      GradientTape tape;
      for (const Tensor& t : x)
        if (is_floating(t.dtype())) tape.watch(t);
      const Tensor y = losses().at(name)(x[0], x[1]);
      const double tolerance = dtype == DType::float32 ? 1e-5 : 1e-10;
      golden::expect_special_values_match(what, y, golden::special_tensor(keras["output"], DType::float64), tolerance);
      const std::vector<Tensor> grads = tape.gradient(reduce_sum(y * golden::special_weights(y)), x);
      for (size_t i = 0; i < x.size(); ++i) {
        if (keras["gradients"][i].is_null()) continue;
        ASSERT_TRUE(grads[i].defined()) << what << ": no gradient for input " << i;
        golden::expect_special_values_match(what + ", gradient of input " + std::to_string(i), grads[i],
                                            golden::special_tensor(keras["gradients"][i], DType::float64), tolerance);
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
