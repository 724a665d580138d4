// Keras functional models both ways: model.to_json() of three TensorFlow models (functional_golden.json, made
// by make_functional_golden.py) becomes a lockstep model with Keras' layer and weight order that, given Keras'
// weights, predicts what Keras predicted; its own config agrees with Keras' graph; and Keras reads lockstep's
// to_json() back and predicts the same (when the test venv has TensorFlow).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../interop_python.h"
#include "golden_util.h"
#include "lockstep/keras/model.h"

namespace lockstep {
namespace {

using golden::json;
namespace fs = std::filesystem;

using golden::tensor_from_json;

keras::Model load(const json& m) {
  keras::clear_session();
  keras::Model model = keras::models::model_from_json(m["json"].get<std::string>());
  std::vector<Tensor> weights;
  for (const json& w : m["weights"]) weights.push_back(tensor_from_json(w));
  model.set_weights(weights);
  return model;
}

TEST(FunctionalGolden, KerasModelsLoadAndPredictTheSame) {
  const json doc = golden::load_golden("functional_golden.json");
  ASSERT_EQ(doc["models"].size(), 3u);
  for (const json& m : doc["models"]) {
    SCOPED_TRACE(m["name"].get<std::string>());
    keras::Model model = load(m);
    EXPECT_EQ(model.name(), m["name"].get<std::string>());
    std::vector<std::string> names;
    for (const keras::LayerPtr& l : model.layers()) names.push_back(l->name());
    EXPECT_EQ(names, m["layers"].get<std::vector<std::string>>());
    for (size_t i = 0; i < m["weights"].size(); ++i) EXPECT_EQ(model.variables()[i].name(), m["weights"][i]["name"]);
    std::vector<Tensor> inputs;
    for (const json& t : m["inputs"]) inputs.push_back(tensor_from_json(t));
    const std::vector<Tensor> outputs = model(inputs);
    ASSERT_EQ(outputs.size(), m["outputs"].size());
    for (size_t i = 0; i < outputs.size(); ++i)
      golden::expect_tensor_matches("output " + std::to_string(i), outputs[i].to_vector<float>(), m["outputs"][i],
                                    1e-5);
    if (inputs.size() == 1) {  // and through predict()
      const Tensor p = model.predict(inputs[0]);
      golden::expect_tensor_matches("predict", p.to_vector<float>(), m["outputs"][0], 1e-5);
    }
  }
}

// The graph half of the config must be Keras' own: layer order, classes, inbound nodes, build configs, endpoints.
// (Each layer's "config" is the layers' business, checked by their own tests.)
TEST(FunctionalGolden, ConfigGraphMatchesKeras) {
  const json doc = golden::load_golden("functional_golden.json");
  for (const json& m : doc["models"]) {
    SCOPED_TRACE(m["name"].get<std::string>());
    const json keras_doc = json::parse(m["json"].get<std::string>());
    const json ours_doc = json::parse(load(m).to_json());
    for (const char* key : {"module", "class_name", "registered_name", "build_config"})
      EXPECT_EQ(ours_doc[key], keras_doc[key]) << key;
    const json& k = keras_doc["config"];
    const json& o = ours_doc["config"];
    for (const char* key : {"name", "trainable", "input_layers", "output_layers"}) EXPECT_EQ(o[key], k[key]) << key;
    ASSERT_EQ(o["layers"].size(), k["layers"].size());
    for (size_t i = 0; i < k["layers"].size(); ++i) {
      const json& kl = k["layers"][i];
      const json& ol = o["layers"][i];
      for (const auto& [key, value] : kl.items()) {
        if (key == "config") continue;
        EXPECT_EQ(ol.value(key, json()), value) << kl["name"] << "." << key;
      }
      EXPECT_EQ(ol.size(), kl.size()) << kl["name"] << ": keys " << ol.dump().substr(0, 200);
      if (kl["class_name"] == "InputLayer") {
        EXPECT_EQ(ol["config"], kl["config"]);
      }
    }
    // And lockstep reads its own JSON back to the same model.
    EXPECT_EQ(keras::models::model_from_json(ours_doc.dump()).to_json(), ours_doc.dump());
  }
}

// Keras reads lockstep's to_json() and, with the same weights, predicts the golden outputs.
TEST(FunctionalGolden, KerasReadsLockstepJson) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("keras", why);
  if (python.empty()) GTEST_SKIP() << why;
  const json doc = golden::load_golden("functional_golden.json");
  const fs::path dir = fs::temp_directory_path() / ("lockstep_functional_golden_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  json models = json::array();
  for (const json& m : doc["models"]) {
    json copy = m;
    copy["json"] = load(m).to_json();
    models.push_back(copy);
  }
  std::ofstream(dir / "models.json") << json{{"models", models}}.dump();
  std::ofstream(dir / "check.py")
      << "import json, os, sys\n"
         "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
         "import numpy as np, keras\n"
         "for m in json.load(open(sys.argv[1]))['models']:\n"
         "    model = keras.models.model_from_json(m['json'])\n"
         "    assert [l.name for l in model.layers] == m['layers'], m['name']\n"
         "    model.set_weights([np.array(w['values'], np.float32).reshape(w['shape']) for w in m['weights']])\n"
         "    xs = [np.array(t['values'], t['dtype']).reshape(t['shape']) for t in m['inputs']]\n"
         "    ys = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)\n"
         "    ys = ys if isinstance(ys, list) else [ys]\n"
         "    for y, t in zip(ys, m['outputs']):\n"
         "        np.testing.assert_allclose(y.reshape(-1), t['values'], atol=1e-5, err_msg=m['name'])\n";
  const std::string command =
      python + " " + (dir / "check.py").string() + " " + (dir / "models.json").string() + " 2>&1";
  const int rc = std::system(command.c_str());
  fs::remove_all(dir);
  EXPECT_EQ(rc, 0) << command;
}

}  // namespace
}  // namespace lockstep
