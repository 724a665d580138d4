// Sequential and layers: shapes, Keras' summary table and parameter counts, configs, weights files, and
// fit/evaluate/predict on small problems.
#include "lockstep/keras/model.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>

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

}  // namespace
}  // namespace lockstep::keras
