// Single Keras classes against Keras itself (class_golden.json, by make_class_golden.py), each made from the
// config Keras recorded through lockstep's registry: a loss's value under each reduction, with and without sample
// weights, and its gradient; an optimizer's losses and final weights over a short training run.
#include <gtest/gtest.h>

#include "golden_util.h"
#include "lockstep/autograd/tape.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"

namespace lockstep::golden {
namespace {

namespace kl = keras::layers;

const json& golden() {
  static const json g = load_golden("class_golden.json");
  return g;
}

std::vector<float> floats(const Tensor& t) { return raw_ops::cast(t, DType::float32).to_vector<float>(); }

TEST(ClassGolden, LossesMatchKerasWithTheirGradients) {
  ASSERT_FALSE(golden()["losses"].empty());
  for (const json& row : golden()["losses"]) {
    const std::string name = row["name"];
    SCOPED_TRACE(name);
    const auto loss = keras::losses::registry().from_config(row["class_name"], row["config"]);
    const Tensor y_true = tensor_from_json(row["y_true"]);
    Variable y_pred(tensor_from_json(row["y_pred"]));
    const Tensor weights = row["sample_weight"].is_null() ? Tensor() : tensor_from_json(row["sample_weight"]);
    GradientTape tape;
    const Tensor value = (*loss)(y_true, y_pred, weights);
    const Tensor total = reduce_sum(value);
    const std::vector<Tensor> grad = tape.gradient(total, std::vector<Variable>{y_pred});
    ASSERT_EQ(value.shape(), shape_of(row["loss"]["shape"]));
    expect_tensor_matches(name + " loss", floats(value), row["loss"], 1e-6);
    expect_tensor_matches(name + " gradient", floats(grad[0]), row["gradient_of_sum"], 1e-6);
  }
}

TEST(ClassGolden, OptimizersTrainAsKeras) {
  ASSERT_FALSE(golden()["optimizers"].empty());
  for (const json& row : golden()["optimizers"]) {
    const std::string name = row["name"];
    SCOPED_TRACE(name);
    keras::clear_session();
    keras::Sequential model({keras::Input({5}), kl::Dense(4, {.activation = "relu"}), kl::Dense(2)});
    std::vector<Tensor> initial;
    for (const json& w : row["initial_weights"]) initial.push_back(tensor_from_json(w));
    model.set_weights(initial);
    model.compile({.optimizer = keras::optimizers::registry().from_config(row["class_name"], row["config"]),
                   .loss = "mse"});
    const auto losses = row["losses"].get<std::vector<double>>();
    for (size_t k = 0; k < losses.size(); ++k) {
      const json& b = row["batches"][k];
      const double loss = model.train_on_batch(tensor_from_json(b["x"]), tensor_from_json(b["y"]))["loss"];
      expect_relative(name + " loss at step " + std::to_string(k), loss, losses[k], std::abs(losses[k]), 1e-5);
    }
    const std::vector<Variable> vars = model.variables();
    ASSERT_EQ(vars.size(), row["final_weights"].size());
    for (size_t w = 0; w < vars.size(); ++w)
      expect_tensor_matches(name + " " + vars[w].name(), floats(vars[w].value()), row["final_weights"][w], 1e-5);
  }
}

}  // namespace
}  // namespace lockstep::golden
