// The layers added for Keras models against Keras itself: each is made from the config Keras wrote
// (layers_golden.json, by make_layers_golden.py), given Keras' weights, and must give Keras' outputs; its
// own get_config() must agree with Keras' on every option, and where a row holds TF's gradients, lockstep's tape
// must give them.
#include <gtest/gtest.h>

#include "golden_util.h"
#include "lockstep/keras/layers.h"

namespace lockstep {
namespace {

using golden::json;
namespace kl = keras::layers;

using golden::tensor_from_json;

// Keras' option values, dtype policies and initializers compared by class and arguments only (their
// serialised wrappers are the .keras format's business).
void expect_config_matches(const std::string& name, const json& keras, const json& ours) {
  for (const auto& [key, value] : keras.items()) {
    if (key == "dtype") continue;
    ASSERT_TRUE(ours.contains(key)) << name << ": lockstep's config lacks \"" << key << "\"";
    if (value.is_object() && value.contains("class_name")) {
      EXPECT_EQ(ours[key]["class_name"], value["class_name"]) << name << "." << key;
      EXPECT_EQ(ours[key]["config"], value["config"]) << name << "." << key;
    } else if (value.is_number_float()) {
      EXPECT_NEAR(ours[key].get<double>(), value.get<double>(), 1e-12) << name << "." << key;
    } else {
      EXPECT_EQ(ours[key], value) << name << "." << key;
    }
  }
}

// A row with "input_gradients": TF's gradients of sum(y * upstream) with respect to the (one) input and each
// trainable weight, which lockstep's tape must give too.
void expect_gradients_match(const std::string& name, keras::Layer& layer, const Tensor& x, const json& row) {
  GradientTape tape({.persistent = true});
  tape.watch(x);
  const Tensor loss = reduce_sum(layer(x) * tensor_from_json(row["upstream"]));
  const Tensor dx = tape.gradient(loss, x);
  golden::expect_tensor_matches(name + " input gradient", dx.to_vector<float>(), row["input_gradients"][0], 1e-5);
  const std::vector<Variable> weights = layer.trainable_weights();
  const std::vector<Tensor> dw = tape.gradient(loss, weights);
  ASSERT_EQ(dw.size(), row["weight_gradients"].size());
  for (size_t i = 0; i < dw.size(); ++i)
    golden::expect_tensor_matches(name + " gradient of " + weights[i].name(), dw[i].to_vector<float>(),
                                  row["weight_gradients"][i], 1e-5);
}

TEST(LayersGolden, ForwardValuesAndConfigsMatchKeras) {
  const json doc = golden::load_golden("layers_golden.json");
  ASSERT_GE(doc["layers"].size(), 10u);
  for (const json& c : doc["layers"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    keras::LayerPtr layer = kl::from_config({{"class_name", c["class_name"]}, {"config", c["config"]}});
    std::vector<Tensor> inputs;
    for (const json& t : c["inputs"]) inputs.push_back(tensor_from_json(t));
    Tensor y = inputs.size() == 1 ? (*layer)(inputs[0]) : (*layer)(inputs);
    ASSERT_EQ(layer->weights().size(), c["weights"].size());
    for (size_t i = 0; i < c["weights"].size(); ++i) {
      const json& w = c["weights"][i];
      EXPECT_EQ(layer->weights()[i].name(), w["name"].get<std::string>());
      layer->weights()[i].assign(tensor_from_json(w));
    }
    y = inputs.size() == 1 ? (*layer)(inputs[0]) : (*layer)(inputs);
    ASSERT_EQ(y.shape(), golden::shape_of(c["output"]["shape"]));
    golden::expect_tensor_matches(name, raw_ops::cast(y, DType::float32).to_vector<float>(), c["output"], 1e-5);
    if (c.contains("input_gradients")) expect_gradients_match(name, *layer, inputs.at(0), c);
    // AveragePooling2D existed before and its config is not Keras 3's yet (no data_format): its forward pass only.
    if (c["class_name"] != "AveragePooling2D") expect_config_matches(name, c["config"], layer->get_config());
    // And back: lockstep's config makes the same layer.
    keras::LayerPtr again = kl::from_config({{"class_name", layer->class_name()}, {"config", layer->get_config()}});
    if (inputs.size() == 1)
      (*again)(inputs[0]);
    else
      (*again)(inputs);
    EXPECT_EQ(again->get_config(), layer->get_config());
  }
}

}  // namespace
}  // namespace lockstep
