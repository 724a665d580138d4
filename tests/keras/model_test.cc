// Sequential and layers: shapes, Keras' summary table and parameter counts, configs, weights files, saved
// models (with the optimizer, under strategies and several workers), and fit/evaluate/predict on small problems.
#include "lockstep/keras/model.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <unistd.h>

#include <barrier>
#include <filesystem>
#include <fstream>

#include "../error_of.h"
#include "../two_workers.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
namespace kl = layers;

Sequential tutorial_cnn() {
  return Sequential({Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}), kl::Flatten(),
                     kl::Dense(128, {.activation = "relu"}), kl::Dense(10)});
}

Sequential fashion_cnn() {
  auto l2 = regularizers::L2(1e-5);
  return Sequential({Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = l2}),
                     kl::MaxPooling2D(), kl::Conv2D(64, 3, {.activation = "relu", .kernel_regularizer = l2}),
                     kl::MaxPooling2D(), kl::Flatten(), kl::Dense(64, {.activation = "relu", .kernel_regularizer = l2}),
                     kl::Dense(10, {.kernel_regularizer = l2})});
}

std::string temp_path(const std::string& name) { return (fs::temp_directory_path() / ("lockstep_test_" + name)).string(); }

TEST(Sequential, SummaryMatchesKeras) {
  clear_session();
  Sequential model = tutorial_cnn();
  EXPECT_EQ(model.count_params(), 2770634);  // Keras' count for the tutorial model
  const std::string expected =
      "Model: \"sequential\"\n"
      "_________________________________________________________________\n"
      " Layer (type)                Output Shape              Param #   \n"
      "=================================================================\n"
      " reshape (Reshape)           (None, 28, 28, 1)         0         \n"
      "                                                                 \n"
      " conv2d (Conv2D)             (None, 26, 26, 32)        320       \n"
      "                                                                 \n"
      " flatten (Flatten)           (None, 21632)             0         \n"
      "                                                                 \n"
      " dense (Dense)               (None, 128)               2769024   \n"
      "                                                                 \n"
      " dense_1 (Dense)             (None, 10)                1290      \n"
      "                                                                 \n"
      "=================================================================\n"
      "Total params: 2,770,634\n"
      "Trainable params: 2,770,634\n"
      "Non-trainable params: 0\n"
      "_________________________________________________________________\n";
  EXPECT_EQ(model.summary_string(), expected);
  EXPECT_EQ(fashion_cnn().count_params(), 121930);
}

TEST(Sequential, RegularizationLossesAndTrainableVariables) {
  Sequential model = fashion_cnn();
  EXPECT_EQ(model.trainable_variables().size(), 8u);
  EXPECT_EQ(model.losses().size(), 4u);
  double expected = 0;
  for (const Variable& v : model.trainable_variables())
    if (v.name().find("kernel") != std::string::npos) expected += 1e-5 * raw_ops::sum(raw_ops::unary(raw_ops::UnaryOp::square, v.value())).item<double>();
  EXPECT_NEAR(add_n(model.losses()).item<double>(), expected, 1e-9);
}

TEST(Sequential, InputShapeMismatchIsAValueError) {
  Sequential model = tutorial_cnn();
  try {
    model(zeros({2, 32, 32}));
    FAIL();
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("expected shape=(None, 28, 28)"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 32, 32)"), std::string::npos) << m;
  }
}

TEST(Layers, OutputShapesAndBehaviour) {
  Tensor x = ones({2, 9, 9, 3});
  EXPECT_EQ(kl::Conv2D(4, 3, {.strides = 2, .padding = "same"})(x).shape(), (Shape{2, 5, 5, 4}));
  EXPECT_EQ(kl::MaxPooling2D(2)(x).shape(), (Shape{2, 4, 4, 3}));
  EXPECT_EQ(kl::AveragePooling2D(3, {.strides = 1, .padding = "same"})(x).shape(), (Shape{2, 9, 9, 3}));
  EXPECT_EQ(kl::Dense(5)(ones({2, 3, 4})).shape(), (Shape{2, 3, 5}));
  kl::Dropout drop(0.5, {.seed = 3});
  Tensor y = drop(ones({1000}), {.training = true});
  double kept = raw_ops::sum(raw_ops::cast(raw_ops::binary(raw_ops::BinaryOp::greater, y, zeros({})), DType::float32)).item<double>();
  EXPECT_NEAR(kept, 500, 60);
  EXPECT_EQ(raw_ops::max(y).item<float>(), 2.0f);
  EXPECT_EQ(drop(ones({10})).to_vector<float>(), std::vector<float>(10, 1.0f));  // inference: identity
  EXPECT_THROW(kl::Dense(3, {.activation = "swishy"}), ValueError);
  EXPECT_THROW(kl::Conv2D(3, 3, {.padding = "full"}), ValueError);
}

TEST(Layers, BatchNormalizationUsesBatchThenMovingStatistics) {
  kl::BatchNormalization bn({.momentum = 0.5});
  Tensor x = from_vector<float>({1, 10, 3, 30}, {2, 2});  // features: (1, 3) and (10, 30)
  Tensor y = bn(x, {.training = true});
  auto v = y.to_vector<float>();
  EXPECT_NEAR(v[0], -1.0f, 1e-2);  // (1 - 2) / sqrt(1 + 1e-3)
  EXPECT_NEAR(v[2], 1.0f, 1e-2);
  auto moving_mean = bn.non_trainable_weights()[0].value().to_vector<float>();
  EXPECT_FLOAT_EQ(moving_mean[0], 1.0f);  // 0 * 0.5 + 2 * 0.5
  EXPECT_FLOAT_EQ(moving_mean[1], 10.0f);
  EXPECT_EQ(bn.trainable_weights().size(), 2u);
}

// Normalization: adapt's statistics per feature of the last axis, (x - mean) / sqrt(variance), given statistics
// and invert, Keras 3's three weights (mean, variance and an int64 count), and the config.
TEST(Layers, NormalizationAdaptsAndInverts) {
  kl::Normalization norm;
  const Tensor x = from_vector<float>({1, 10, 3, 30, 5, 50}, {3, 2});  // features (1, 3, 5) and (10, 30, 50)
  norm.adapt(x);
  ASSERT_EQ(norm.weights().size(), 3u);
  EXPECT_EQ(norm.weights()[0].value().to_vector<float>(), (std::vector<float>{3, 30}));
  EXPECT_EQ(norm.weights()[2].dtype(), DType::int64);
  EXPECT_TRUE(norm.trainable_weights().empty());
  const std::vector<float> y = norm(x).to_vector<float>();
  const float sd = std::sqrt(8.0f / 3);  // the population variance of (1, 3, 5)
  EXPECT_NEAR(y[0], -2 / sd, 1e-5);
  EXPECT_NEAR(y[5], 2 / sd, 1e-5);  // (50 - 30) / (10 sd)
  kl::Normalization given({.mean = std::vector<double>{3.0}, .variance = std::vector<double>{4.0}, .invert = true});
  EXPECT_EQ(given(from_vector<float>({0, 1}, {2, 1})).to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_THROW(given.adapt(x), ValueError);
  EXPECT_THROW(kl::Normalization({.mean = std::vector<double>{1.0}, .variance = std::nullopt}), ValueError);
  const nlohmann::json config = given.get_config();
  EXPECT_EQ(config["mean"], nlohmann::json::array({3.0}));
  EXPECT_EQ(config["invert"], true);
}

// Found by fuzz_model_config: an empty "kernel_size", "strides" or "pool_size" list was read past its end.
TEST(Sequential, ConfigWithAnEmptySizeListIsRefused) {
  const nlohmann::json config = fashion_cnn().get_config();
  int refused = 0;
  for (size_t i = 0; i < config["layers"].size(); ++i) {
    for (const char* key : {"kernel_size", "strides", "pool_size"}) {
      if (!config["layers"][i]["config"].contains(key)) continue;
      nlohmann::json broken = config;
      broken["layers"][i]["config"][key] = nlohmann::json::array();
      EXPECT_THROW(Sequential::from_config(broken), ValueError) << key << " of layer " << i;
      ++refused;
    }
  }
  EXPECT_EQ(refused, 8);  // kernel_size and strides of two Conv2D, strides and pool_size of two MaxPooling2D
}

TEST(Sequential, ConfigRoundTripAndWeightFiles) {
  Sequential model = fashion_cnn();
  Sequential copy = Sequential::from_config(model.get_config());
  EXPECT_EQ(copy.count_params(), model.count_params());
  EXPECT_EQ(copy.get_config()["layers"].size(), model.get_config()["layers"].size());
  const std::string path = temp_path("weights.safetensors");
  model.save_weights(path);
  copy.load_weights(path);
  auto a = model.get_weights(), b = copy.get_weights();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>());
  // A file from another model is refused with the reason.
  try {
    tutorial_cnn().load_weights(path);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  const std::string dir = temp_path("saved_model");
  model.save(dir);
  Sequential loaded = Sequential::load_model(dir);
  EXPECT_EQ(loaded.get_weights()[0].to_vector<float>(), a[0].to_vector<float>());
  EXPECT_THROW(Sequential::load_model(temp_path("no_such_model")), NotFoundError);
  fs::remove_all(dir);
  fs::remove(path);
}

// A save that fails half way (the weights do not fit on the "disk") leaves no model directory, and an old
// saved model stays whole.
TEST(Sequential, FailedSaveLeavesNoHalfWrittenModel) {
  const std::string dir = temp_path("atomic_model");
  fs::remove_all(dir);
  Sequential model = fashion_cnn();
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 64 * 1024;  // config.json fits, the weights (about 450 KB) do not
  ::setrlimit(RLIMIT_FSIZE, &small);
  EXPECT_THROW(model.save(dir), Error);
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, handler);
  EXPECT_FALSE(fs::exists(dir));
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path()))
    EXPECT_EQ(e.path().filename().string().find("lockstep_test_atomic_model"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

// A linearly separable 3-class problem: fit must learn it.
std::pair<Tensor, Tensor> blobs(int64_t n) {
  Philox rng(5);
  Tensor labels = raw_ops::cast(random_uniform({n}, rng, 0, 3, DType::float64), DType::int64);
  Tensor centers = from_vector<float>({2, 0, -2, 2, 0, -2}, {3, 2});
  Tensor x = raw_ops::binary(raw_ops::BinaryOp::add, raw_ops::gather(centers, labels), random_normal({n, 2}, rng, 0, 0.3));
  return {x, labels};
}

TEST(Fit, LearnsAndReportsHistory) {
  auto [x, y] = blobs(300);
  Sequential model({Input({2}), kl::Dense(16, {.activation = "relu"}), kl::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto history = model.fit(x, y, {.epochs = 5, .batch_size = 32, .verbose = 0});
  ASSERT_EQ(history.epoch.size(), 5u);
  EXPECT_LT(history.history["loss"].back(), history.history["loss"].front());
  EXPECT_GT(history.history["accuracy"].back(), 0.95);
  auto result = model.evaluate(x, y, {.verbose = 0});
  EXPECT_GT(result["accuracy"], 0.95);
  EXPECT_EQ(model.predict(x).shape(), (Shape{300, 3}));
  EXPECT_EQ(model.optimizer()->iterations(), 5 * 10);  // ceil(300 / 32) = 10 steps per epoch
}

// layer.trainable = false: fit leaves a frozen layer's weights as they were (BatchNormalization's moving statistics
// too: it normalises with them), the rest trains, and the setting goes through the config.
TEST(Fit, FrozenLayersKeepTheirWeights) {
  auto [x, y] = blobs(96);
  Sequential model({Input({2}), kl::Dense(8, {.activation = "relu"}), kl::BatchNormalization(), kl::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const LayerPtr dense = model.layers()[0], norm = model.layers()[1], head = model.layers()[2];
  dense->set_trainable(false);
  norm->set_trainable(false);
  EXPECT_EQ(model.trainable_variables().size(), 2u);  // the head's kernel and bias
  EXPECT_EQ(model.non_trainable_variables().size(), 6u);
  const std::vector<Tensor> before = model.get_weights();
  model.fit(x, y, {.epochs = 2, .batch_size = 32, .verbose = 0});
  const std::vector<Tensor> after = model.get_weights();
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>()) << i;
  EXPECT_NE(after[6].to_vector<float>(), before[6].to_vector<float>());
  const nlohmann::json config = model.get_config();
  EXPECT_EQ(config["layers"][1]["config"]["trainable"], false);
  Sequential copy = Sequential::from_config(config);
  EXPECT_FALSE(copy.layers()[0]->trainable());
  EXPECT_TRUE(copy.layers()[2]->trainable());
  EXPECT_EQ(copy.trainable_variables().size(), 2u);
}

TEST(Fit, ValidationStepsPerEpochAndErrors) {
  auto [x, y] = blobs(128);
  Sequential model({Input({2}), kl::Dense(3)});
  EXPECT_THROW(model.fit(x, y), RuntimeError);  // not compiled
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  auto ds = data::Dataset::from_tensor_slices(x, y).batch(16);
  auto history = model.fit(ds.repeat(), {.epochs = 2, .steps_per_epoch = 3, .validation_data = ds, .verbose = 0});
  EXPECT_EQ(model.optimizer()->iterations(), 6);
  EXPECT_EQ(history.history.count("val_loss"), 1u);
  EXPECT_EQ(history.history.count("val_accuracy"), 1u);
  // An endless dataset needs steps_per_epoch.
  EXPECT_THROW(model.fit(ds.repeat(), {.epochs = 1, .verbose = 0}), ValueError);
}

// Data with no sample is refused, naming it, before any step: as arrays, as a dataset whose cardinality says so,
// and as one whose first pass gives nothing (refused after that pass). Keras 2 raised too; Keras 3 returns an empty
// History, which lockstep's loss of 0.0 would only imitate badly.
TEST(Fit, EmptyOrMismatchedInputIsRefusedBeforeAnyStep) {
  using testing::error_of;
  auto [x, y] = blobs(32);
  Sequential model({Input({2}), kl::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  const Tensor x0 = from_vector<float>({}, {0, 2}), y0 = from_vector<int64_t>({}, {0});
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y).batch(8);
  const data::Dataset empty = data::Dataset::from_tensor_slices(x0, y0).batch(8);
  const data::Dataset filtered =
      data::Dataset::from_tensor_slices(x, y).filter([](const data::Element&) { return false; }).batch(8);
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                                   : ::testing::AssertionFailure() << message;
  };
  // Arrays: the empty one by name (not the shuffle that fit(x, y) adds), and lengths that differ.
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x0, y0, {.verbose = 0}); }), "x is empty (shape (0, 2))"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.evaluate(x0, y0, {.verbose = 0}); }), "evaluate() got no data"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.predict(x0); }), "predict() got no data: x is empty"));
  const Tensor y7 = blobs(7).second;
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x, y7, {.verbose = 0}); }), "x has 32 samples but y has 7"));
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(x, y, {.batch_size = 0}); }), "batch_size must be >= 1"));
  // Datasets.
  for (const data::Dataset& d : {empty, ds.take(0), filtered}) {
    EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(d, {.epochs = 2, .verbose = 0}); }),
                    "the dataset passed to fit() is empty"));
    EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(d.repeat(), {.steps_per_epoch = 3, .verbose = 0}); }),
                    "the dataset passed to fit() is empty"));
    EXPECT_TRUE(has(error_of<ValueError>([&] { model.evaluate(d, {.verbose = 0}); }), "is empty"));
    EXPECT_TRUE(has(error_of<ValueError>([&] { model.predict(d); }), "the dataset passed to predict() is empty"));
  }
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(ds, {.validation_data = empty, .verbose = 0}); }),
                  "fit()'s validation_data is empty"));
  EXPECT_EQ(model.optimizer()->iterations(), 0);
  // A validation set that turns out empty is found at the first epoch's end.
  EXPECT_TRUE(has(error_of<ValueError>([&] { model.fit(ds, {.validation_data = filtered, .verbose = 0}); }),
                  "validation_data) is empty"));
  // steps_per_epoch past a finite dataset: Keras warns and stops after the data it has.
  const int64_t before = model.optimizer()->iterations();
  auto history = model.fit(ds, {.epochs = 3, .steps_per_epoch = 10, .verbose = 0});
  EXPECT_EQ(history.epoch.size(), 1u);
  EXPECT_EQ(model.optimizer()->iterations() - before, 4);
}

TEST(Fit, SameSeedSameWeights) {
  auto run = [] {
    utils::set_random_seed(42);
    auto [x, y] = blobs(64);
    Sequential model({Input({2}), kl::Dense(8, {.activation = "relu"}), kl::Dropout(0.2), kl::Dense(3)});
    model.compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model.fit(data::Dataset::from_tensor_slices(x, y).shuffle(64, 7).batch(8), {.epochs = 2, .verbose = 0});
    return model.get_weights();
  };
  auto a = run(), b = run();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>());
}

// ---- saved models: save -> load_model -> evaluate ----

struct SavedModelDir {
  std::string path;
  explicit SavedModelDir(const std::string& name = "saved") : path(temp_path(name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~SavedModelDir() { fs::remove_all(path); }
};

// Layer names given, so that models built on several threads (workers) at once have the same names.
Sequential compiled_blob_model(const std::string& hidden = "", const std::string& logits = "") {
  Sequential model({Input({2}), kl::Dense(16, {.activation = "relu", .name = hidden}), kl::Dense(3, {.name = logits})});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}

void expect_same_weights(const Sequential& a, const Sequential& b) {
  auto wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i].to_vector<float>(), wb[i].to_vector<float>()) << i;
}

TEST(SavedModel, LoadedModelEvaluatesTheSameAndContinuesTraining) {
  utils::set_random_seed(3);
  auto [x, y] = blobs(200);
  SavedModelDir dir;
  Sequential model = compiled_blob_model();
  model.fit(x, y, {.epochs = 2, .batch_size = 32, .shuffle = false, .verbose = 0});
  const auto before = model.evaluate(x, y, {.verbose = 0});
  model.save(dir.path);
  EXPECT_TRUE(fs::exists(dir.path + "/optimizer.safetensors"));

  Sequential loaded = Sequential::load_model(dir.path);
  EXPECT_EQ(loaded.evaluate(x, y, {.verbose = 0}), before);  // exactly the same loss and accuracy
  ASSERT_TRUE(loaded.optimizer());
  EXPECT_EQ(loaded.optimizer()->get_config(), model.optimizer()->get_config());
  EXPECT_EQ(loaded.optimizer()->iterations(), 14);  // 2 epochs of ceil(200 / 32) steps
  EXPECT_EQ(loaded.loss()->get_config(), model.loss()->get_config());
  ASSERT_EQ(loaded.metrics().size(), 1u);
  EXPECT_EQ(loaded.metrics()[0]->name(), "accuracy");

  // Adam's moments came back: one more epoch of each gives bitwise the same weights.
  model.fit(x, y, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
  loaded.fit(x, y, {.epochs = 1, .batch_size = 32, .shuffle = false, .verbose = 0});
  EXPECT_EQ(loaded.optimizer()->iterations(), 21);
  expect_same_weights(loaded, model);

  // Keras 3's layout of the compile config.
  std::ifstream in(dir.path + "/config.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["compile_config"]["optimizer"]["class_name"], "Adam");
  EXPECT_EQ(doc["compile_config"]["loss"]["class_name"], "SparseCategoricalCrossentropy");
  EXPECT_EQ(doc["compile_config"]["metrics"], nlohmann::json::array({"accuracy"}));
}

TEST(SavedModel, IncludeOptimizerFalseAndCompileFalse) {
  auto [x, y] = blobs(64);
  SavedModelDir dir;
  Sequential model = compiled_blob_model();
  model.fit(x, y, {.epochs = 1, .batch_size = 32, .verbose = 0});
  model.save(dir.path, {.include_optimizer = false});
  EXPECT_FALSE(fs::exists(dir.path + "/optimizer.safetensors"));
  Sequential loaded = Sequential::load_model(dir.path);
  EXPECT_FALSE(loaded.optimizer());
  expect_same_weights(loaded, model);

  model.save(dir.path);  // replaces the saved model
  EXPECT_FALSE(Sequential::load_model(dir.path, {.compile = false}).optimizer());
  // SGD with momentum and a schedule, and a loss given by name, round-trip too.
  Sequential sgd({Input({2}), kl::Dense(3)});
  sgd.compile({.optimizer = optimizers::SGD({.learning_rate = optimizers::ExponentialDecay(
                                                 {.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5}),
                                             .momentum = 0.9, .nesterov = true}),
               .loss = "sparse_categorical_crossentropy", .metrics = {"acc"}});
  sgd.fit(x, y, {.epochs = 1, .batch_size = 16, .verbose = 0});
  sgd.save(dir.path);
  Sequential back = Sequential::load_model(dir.path);
  EXPECT_EQ(back.optimizer()->get_config(), sgd.optimizer()->get_config());
  EXPECT_EQ(back.optimizer()->learning_rate(), sgd.optimizer()->learning_rate());
  EXPECT_EQ(back.evaluate(x, y, {.verbose = 0}), sgd.evaluate(x, y, {.verbose = 0}));
}

// What load_model says about a missing or damaged saved model: one line naming the file.
TEST(SavedModel, MissingAndCorruptedFilesAreNamed) {
  SavedModelDir dir;
  auto message = [&](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(Sequential::load_model(dir.path), NotFoundError);
  Sequential model = compiled_blob_model();
  auto [x, y] = blobs(32);
  model.fit(x, y, {.epochs = 1, .verbose = 0});
  auto resave = [&] {
    fs::remove_all(dir.path);
    model.save(dir.path);
  };

  resave();
  fs::remove(dir.path + "/model.weights.safetensors");
  std::string m = message([&] { Sequential::load_model(dir.path); });
  EXPECT_NE(m.find("model.weights.safetensors is missing"), std::string::npos) << m;
  EXPECT_THROW(Sequential::load_model(dir.path), NotFoundError);

  resave();
  fs::resize_file(dir.path + "/model.weights.safetensors", 100);
  EXPECT_THROW(Sequential::load_model(dir.path), DataLossError);

  resave();
  { std::ofstream(dir.path + "/config.json") << "{\"config\": [1, 2"; }
  m = message([&] { Sequential::load_model(dir.path); });
  EXPECT_NE(m.find("config.json is not valid JSON"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;

  resave();
  fs::remove(dir.path + "/optimizer.safetensors");
  m = message([&] { Sequential::load_model(dir.path); });
  EXPECT_NE(m.find("optimizer.safetensors is missing"), std::string::npos) << m;
  EXPECT_FALSE(Sequential::load_model(dir.path, {.compile = false}).optimizer());  // the way out it names

  resave();
  {
    std::fstream f(dir.path + "/optimizer.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');  // a bit flip in the last tensor: its CRC32C no longer matches
  }
  EXPECT_THROW(Sequential::load_model(dir.path), DataLossError);
}

// Found writing fuzz_model_config (and confirmed on it): a config.json with "units": 1e11 allocated 1.6 TB before
// the weights were read; and "units": 1e30 (a float) was converted to an integer with undefined behaviour.
TEST(SavedModel, ImpossibleSizesInTheConfigAreRefusedBeforeAllocating) {
  SavedModelDir dir;
  Sequential({Input({4}), kl::Dense(3, {.name = "dense"})}).save(dir.path);
  nlohmann::json config;
  std::ifstream(dir.path + "/config.json") >> config;
  auto load_with_units = [&](const nlohmann::json& units) {
    nlohmann::json broken = config;
    broken["config"]["layers"][1]["config"]["units"] = units;
    std::ofstream(dir.path + "/config.json") << broken.dump();
    try {
      Sequential::load_model(dir.path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ASSERT_EQ(config["config"]["layers"][1]["class_name"], "Dense");
  std::string m = load_with_units(100000000000);
  EXPECT_NE(m.find("needs more parameters than the saved weights hold"), std::string::npos) << m;
  m = load_with_units(1e30);
  EXPECT_NE(m.find("\"units\" is 1e+30, expected an integer"), std::string::npos) << m;
  EXPECT_EQ(load_with_units(3), "no error");
}

// Saved under a MirroredStrategy with two replicas, loaded without a strategy and under another
// MirroredStrategy (whose variables it then mirrors): the same test loss and accuracy, and training goes on.
TEST(SavedModel, UnderAndAcrossMirroredStrategies) {
  utils::set_random_seed(4);
  auto [x, y] = blobs(128);
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y).batch(32);
  SavedModelDir dir;
  distribute::MirroredStrategy two({"/cpu:0", "/cpu:1"});
  Sequential model;
  {
    auto scope = two.scope();
    model = compiled_blob_model();
  }
  model.fit(ds, {.epochs = 2, .verbose = 0});
  const auto before = model.evaluate(ds, {.verbose = 0});
  model.save(dir.path);

  Sequential plain = Sequential::load_model(dir.path);
  const auto plain_result = plain.evaluate(ds, {.verbose = 0});
  EXPECT_EQ(plain_result.at("accuracy"), before.at("accuracy"));
  EXPECT_NEAR(plain_result.at("loss"), before.at("loss"), 1e-6);  // one replica sums in another order
  EXPECT_EQ(plain.optimizer()->iterations(), model.optimizer()->iterations());

  distribute::MirroredStrategy other({"/cpu:0", "/cpu:1"});
  Sequential mirrored;
  {
    auto scope = other.scope();
    mirrored = Sequential::load_model(dir.path);
  }
  EXPECT_EQ(other.mirrored_variables().size(), mirrored.variables().size());
  EXPECT_EQ(mirrored.evaluate(ds, {.verbose = 0}), before);  // the same replicas: exactly the same numbers
  model.fit(ds, {.epochs = 1, .verbose = 0});
  mirrored.fit(ds, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(mirrored.optimizer()->iterations(), model.optimizer()->iterations());
  expect_same_weights(mirrored, model);
}

// Two workers (threads, each with its own MultiWorkerMirroredStrategy): save writes the chief's directory
// only, and load_model on both needs it on the chief only (it reads and broadcasts), on 2 workers or 1.
TEST(SavedModel, MultiWorkerSaveOnTheChiefAndLoadWithoutASharedDirectory) {
  auto [x, y] = blobs(64);
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y).batch(16);
  SavedModelDir chief_dir("saved_chief"), other_dir("saved_other");
  std::vector<std::map<std::string, double>> trained(2), loaded(2);
  auto worker = [&](int rank, distribute::MultiWorkerMirroredStrategy& strategy) {
    const std::string& mine = rank == 0 ? chief_dir.path : other_dir.path;
    Sequential model;
    {
      auto scope = strategy.scope();
      model = compiled_blob_model("hidden", "logits");  // the chief's initial weights are broadcast by fit
    }
    model.fit(ds, {.epochs = 1, .verbose = 0});
    trained[static_cast<size_t>(rank)] = model.evaluate(ds, {.verbose = 0});
    model.save(mine);
    auto scope = strategy.scope();
    Sequential back = Sequential::load_model(mine);
    loaded[static_cast<size_t>(rank)] = back.evaluate(ds, {.verbose = 0});
    back.fit(ds, {.epochs = 1, .verbose = 0});  // the restored optimizer trains on 2 workers
  };
  const std::vector<std::string> errors = testing::on_two_workers(worker);
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_TRUE(fs::exists(chief_dir.path + "/config.json"));
  EXPECT_FALSE(fs::exists(other_dir.path)) << "a non-chief worker wrote a saved model";
  EXPECT_EQ(loaded[0], trained[0]);
  EXPECT_EQ(loaded[1], trained[0]);
  // And on one worker, without a strategy: the same accuracy.
  const auto single = Sequential::load_model(chief_dir.path).evaluate(ds, {.verbose = 0});
  EXPECT_EQ(single.at("accuracy"), trained[0].at("accuracy"));
}

// Every worker refuses a dataset whose first pass gives nothing at the same step, rather than leaving the others
// waiting in a collective.
TEST(Fit, EmptyDatasetOnTwoWorkersIsRefusedByBoth) {
  auto [x, y] = blobs(32);
  const data::Dataset filtered =
      data::Dataset::from_tensor_slices(x, y).filter([](const data::Element&) { return false; }).batch(8);
  std::vector<std::string> refusals(2);
  // Both workers leave together once refused: a worker that left first with its error would be a failed peer to
  // the other, which this process shares (a separate process would just exit with it).
  std::barrier refused(2);
  const std::vector<std::string> errors =
      testing::on_two_workers([&](int rank, distribute::MultiWorkerMirroredStrategy& s) {
        Sequential model;
        {
          auto scope = s.scope();
          model = compiled_blob_model("hidden", "logits");
        }
        try {
          model.fit(filtered, {.epochs = 2, .verbose = 0});
        } catch (const ValueError& e) {
          refusals[static_cast<size_t>(rank)] = e.what();
        }
        refused.arrive_and_wait();
      });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  for (const std::string& e : refusals)
    EXPECT_NE(e.find("the dataset passed to fit() is empty"), std::string::npos) << e;
}

}  // namespace
}  // namespace lockstep::keras
