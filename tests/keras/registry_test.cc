// The registries of Keras classes: the classes docs/api.md lists are exactly the registered ones, every registered
// object names its class and comes back from its own config, and unknown names are errors listing what there is.
#include "lockstep/keras/registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../error_of.h"
#include "lockstep/keras/activations.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/keras/registry_doc.h"

namespace lockstep::keras {
namespace {

using nlohmann::json;
using testing::error_of;

// docs/keras-classes.md is what the registries generate (`lockstep classes`): a class added to a registry, or an
// argument to a table, reaches the docs by `make docs`, never by an edit by hand.
TEST(Registry, DocsAreWhatTheRegistriesGenerate) {
  const std::filesystem::path path = std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "docs/keras-classes.md";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == registries_markdown())
      << "docs/keras-classes.md is not what the registries generate: run `make docs` and commit it";
}

// from_config(class, object.get_config()) makes an object with the same config.
template <typename T>
void expect_round_trip(const Registry<T>& registry, const json& config) {
  for (const std::string& name : registry.names()) {
    SCOPED_TRACE(name);
    const T object = registry.from_config(name, config);
    EXPECT_EQ(object->class_name(), name);
    EXPECT_EQ(registry.from_config(name, object->get_config())->get_config(), object->get_config());
  }
}

TEST(Registry, EveryObjectNamesItsClassAndComesBackFromItsConfig) {
  expect_round_trip(losses::registry(), json::object());
  expect_round_trip(metrics::registry(), json::object());
  expect_round_trip(optimizers::registry(), json::object());
  // Initializers and regularizers write Keras' serialised form, class name included.
  for (const std::string& name : initializers::registry().names()) {
    const json config = initializers::registry().from_config(name, json::object())->get_config();
    EXPECT_EQ(config["class_name"], name);
    EXPECT_EQ(initializers::from_config(config)->get_config(), config);
  }
  for (const std::string& name : regularizers::registry().names()) {
    const json config = regularizers::registry().from_config(name, {{"l1", 0.01}, {"l2", 0.02}})->get_config();
    EXPECT_EQ(config["class_name"], name);
    EXPECT_EQ(regularizers::from_config(config)->get_config(), config);
  }
  const optimizers::LearningRate decay = optimizers::LearningRate::from_json(
      {{"class_name", "ExponentialDecay"},
       {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 10}, {"decay_rate", 0.5}}}});
  EXPECT_EQ(optimizers::LearningRate::from_json(decay.to_json()).to_json(), decay.to_json());
  EXPECT_DOUBLE_EQ(decay.at(10), 0.05);
}

TEST(Registry, ShortNamesAndClassNamesFindTheSameEntry) {
  EXPECT_EQ(optimizers::get("ADAM")->class_name(), "Adam");
  EXPECT_EQ(optimizers::get("Adam")->class_name(), "Adam");
  EXPECT_EQ(losses::get("mse")->class_name(), "MeanSquaredError");
  EXPECT_EQ(losses::get("MeanSquaredError")->class_name(), "MeanSquaredError");
  EXPECT_EQ(metrics::get("binary_accuracy")->class_name(), "BinaryAccuracy");
  // The defaults of a short name are those of the class's factory.
  EXPECT_EQ(optimizers::get("sgd")->get_config(), optimizers::SGD()->get_config());
  EXPECT_EQ(losses::get("categorical_crossentropy")->get_config(), losses::CategoricalCrossentropy()->get_config());
}

TEST(Registry, UnknownNamesAreErrorsListingTheRegisteredOnes) {
  const std::string layer = error_of<ValueError>([] {
    layers::from_config({{"class_name", "LSTM"}, {"config", {{"name", "lstm"}}}});
  });
  for (const std::string& name : layers::registry().names()) EXPECT_NE(layer.find(name), std::string::npos) << layer;
  const std::string optimizer = error_of<ValueError>([] {
    optimizers::from_config({{"class_name", "Nadam"}, {"config", json::object()}});
  });
  EXPECT_EQ(optimizer, "optimizer class 'Nadam' is not supported by lockstep (it has " +
                           join_names(optimizers::registry().names(), ", ") + ")");
  const std::string loss = error_of<ValueError>([] { losses::get("squared_hinge"); });
  for (const std::string& name : losses::registry().identifiers())
    EXPECT_NE(loss.find("'" + name + "'"), std::string::npos) << loss;
  EXPECT_NE(error_of<ValueError>([] { activations::get("swish"); }).find("'relu', 'softmax'"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([] { initializers::get("orthogonal"); }).find("'glorot_uniform'"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([] { regularizers::from_config("l3"); }).find("'l1_l2'"), std::string::npos);
  EXPECT_NE(error_of<ValueError>([] {
              optimizers::LearningRate::from_json({{"class_name", "CosineDecay"}, {"config", json::object()}});
            }).find("(it has ExponentialDecay, PiecewiseConstantDecay)"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::keras
