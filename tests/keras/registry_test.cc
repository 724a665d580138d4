// The registries of Keras classes: the classes docs/api.md lists are exactly the registered ones, every registered
// object names its class and comes back from its own config, and unknown names are errors listing what there is.
#include "lockstep/keras/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../error_of.h"
#include "lockstep/keras/activations.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/optimizers.h"

namespace lockstep::keras {
namespace {

using nlohmann::json;
using testing::error_of;

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The table of docs/api.md whose rows read "| kind | Class, Class, ... |", by kind.
std::map<std::string, std::vector<std::string>> documented_classes() {
  std::ifstream in(std::filesystem::path(LOCKSTEP_SOURCE_DIR) / "docs/api.md");
  EXPECT_TRUE(in.good()) << "cannot read docs/api.md";
  std::map<std::string, std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, '|');) {
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    // "| kind | a, b |" splits into "", kind, "a, b".
    if (cells.size() != 3 || !cells[0].empty() || cells[1] == "kind" || cells[1].starts_with("---")) continue;
    std::vector<std::string>& names = out[cells[1]];
    std::stringstream list(cells[2]);
    for (std::string name; std::getline(list, name, ',');) names.push_back(name.substr(name.find_first_not_of(' ')));
  }
  return out;
}

TEST(Registry, DocsListExactlyTheRegisteredClasses) {
  const std::map<std::string, std::vector<std::string>> registered = {
      {"layers", layers::registry().names()},
      {"losses", losses::registry().names()},
      {"metrics", metrics::registry().names()},
      {"optimizers", optimizers::registry().names()},
      {"schedules", optimizers::schedules::registry().names()},
      {"activations", activations::registry().names()},
      {"initializers", initializers::registry().names()},
      {"regularizers", regularizers::registry().names()}};
  const auto documented = documented_classes();
  for (const auto& [kind, names] : registered) {
    ASSERT_TRUE(documented.contains(kind)) << "docs/api.md has no row \"| " << kind << " | ... |\"";
    EXPECT_EQ(sorted(documented.at(kind)), sorted(names)) << kind << ": docs/api.md (left) against the registry";
  }
  EXPECT_EQ(documented.size(), registered.size()) << "docs/api.md lists a kind that has no registry";
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
  const std::string loss = error_of<ValueError>([] { losses::get("hinge"); });
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
