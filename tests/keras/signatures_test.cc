// Every registry's parameter tables against Keras' own signatures (tests/golden/keras_signatures.json, recorded
// from TensorFlow 2.21's Keras by tests/golden/make_keras_signatures.py): each class lockstep has takes Keras'
// arguments, in Keras' order, with Keras' defaults. The Python classes are generated from these tables
// (python/tests/test_registry.py checks them against the same file).
#include "lockstep/keras/registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {
namespace {

using nlohmann::json;

const json& golden() {
  static const json g = [] {
    std::ifstream in(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "tests/golden/keras_signatures.json");
    EXPECT_TRUE(in.good()) << "cannot read tests/golden/keras_signatures.json";
    return json::parse(in);
  }();
  return g;
}

// "units, activation=null, ..." from a table, and from Keras' recorded parameters: equal when the names, their
// order and the defaults agree.
std::string text(const std::vector<Param>& params) {
  std::string out;
  for (const Param& p : params) out += (out.empty() ? "" : ", ") + p.name + (p.required() ? "" : "=" + p.default_value.dump());
  return out;
}
std::string text(const json& keras) {
  std::string out;
  for (const json& p : keras)
    out += (out.empty() ? "" : ", ") + p["name"].get<std::string>() + (p.contains("required") ? "" : "=" + p["default"].dump());
  return out;
}

template <typename T>
void expect_keras_signatures(const Registry<T>& registry, const std::vector<std::string>& skip = {}) {
  const json& classes = golden().at(registry.kind());
  for (const auto& e : registry.entries()) {
    if (std::find(skip.begin(), skip.end(), e.class_name) != skip.end()) continue;
    ASSERT_TRUE(classes.contains(e.class_name)) << registry.kind() << " " << e.class_name << " is not a Keras class";
    EXPECT_EQ(text(e.params), text(classes[e.class_name])) << registry.kind() << " " << e.class_name;
    for (const Param& p : e.params) {
      EXPECT_FALSE(p.doc.empty()) << e.class_name << "." << p.name << " has no doc line";
      if (!p.only.empty() && !p.required()) {
        EXPECT_NE(std::find(p.only.begin(), p.only.end(), p.default_value), p.only.end())
            << e.class_name << "." << p.name << ": Keras' default is not among the values lockstep accepts";
      }
    }
  }
}

TEST(Signatures, EveryLayerTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(layers::registry());
  EXPECT_EQ(text(layers::base_params()), text(golden()["layer"]["Layer"]));
}
TEST(Signatures, EveryLossTakesKerasArgumentsWithKerasDefaults) { expect_keras_signatures(losses::registry()); }
TEST(Signatures, EveryMetricTakesKerasArgumentsWithKerasDefaults) { expect_keras_signatures(metrics::registry()); }
TEST(Signatures, EveryOptimizerTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(optimizers::registry());
}
TEST(Signatures, EveryScheduleTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(optimizers::schedules::registry());
}
TEST(Signatures, EveryInitializerTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(initializers::registry());
}
TEST(Signatures, EveryCallbackTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(callbacks::registry());
}
TEST(Signatures, EveryRegularizerTakesKerasArgumentsWithKerasDefaults) {
  expect_keras_signatures(regularizers::registry());
}
TEST(Signatures, FitEvaluateAndPredictTakeKerasArgumentsWithKerasDefaults) {
  EXPECT_EQ(text(fit_params()), text(golden()["model method"]["fit"]));
  EXPECT_EQ(text(evaluate_params()), text(golden()["model method"]["evaluate"]));
  EXPECT_EQ(text(predict_params()), text(golden()["model method"]["predict"]));
}

// The table's defaults are what a class is made with: a config giving only the required arguments makes the
// object Keras' defaults describe, and an argument lockstep takes only at its default is refused at another value.
TEST(Signatures, AMissingArgumentTakesTheTablesDefaultAndARequiredOneIsNamed) {
  EXPECT_EQ(optimizers::registry().from_config("SGD", json::object())->learning_rate(), 0.01);
  EXPECT_EQ(optimizers::registry().default_of("SGD", "learning_rate"), 0.01);
  try {
    layers::registry().from_config("Dense", json::object());
    FAIL() << "Dense without units was made";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("missing required argument 'units'"), std::string::npos) << e.what();
  }
  try {
    layers::registry().from_config("Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"groups", 2}});
    FAIL() << "Conv2D with groups=2 was made";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("groups=2 is not supported by lockstep (supported: 1)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lockstep::keras
