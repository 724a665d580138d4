// The functional API and the layers added with it: symbolic calls, graph order (Keras' layers and weights
// order), skip connections, several inputs and outputs, shared layers, configs both ways, fit/evaluate/predict,
// saving, and the errors for graphs and options lockstep cannot build.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "crash_at.h"
#include "../test_dir.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"
#include "../error_of.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
namespace kl = layers;

Tensor uniform(const Shape& shape, uint64_t seed) {
  Philox rng(seed);
  return random_uniform(shape, rng, -1, 1);
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double d = 0;
  auto va = raw_ops::cast(a, DType::float64).to_vector<double>(),
       vb = raw_ops::cast(b, DType::float64).to_vector<double>();
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) d = std::max(d, std::abs(va[i] - vb[i]));
  return d;
}

std::vector<std::string> layer_names(const Model& m) {
  std::vector<std::string> out;
  for (const LayerPtr& l : m.layers()) out.push_back(l->name());
  return out;
}

using lockstep::testing::error_of;

TEST(Functional, TemporaryLayersRunAsTheirEagerCalls) {
  clear_session();
  auto inputs = Input({4});
  auto x = kl::Dense(8, {.activation = "relu"})(inputs);  // temporaries: the graph holds copies
  auto outputs = kl::Dense(3)(x);
  Model model(inputs, outputs);
  EXPECT_EQ(model.name(), "functional");
  EXPECT_EQ(layer_names(model), (std::vector<std::string>{"input_layer", "dense", "dense_1"}));
  EXPECT_EQ(model.variables().size(), 4u);
  EXPECT_EQ(outputs.shape(), Shape({3}));
  const Tensor in = uniform({5, 4}, 1);
  const Tensor expected = (*model.get_layer("dense_1"))((*model.get_layer("dense"))(in));
  EXPECT_EQ(max_diff(model(in), expected), 0.0);
  EXPECT_EQ(max_diff(model.predict(in), expected), 0.0);
}

TEST(Functional, ALayerObjectCalledTwiceSharesItsWeights) {
  clear_session();
  auto inputs = Input({4});
  kl::Dense shared(4, {.name = "shared"});
  auto y = shared(shared(inputs));
  Model model(inputs, y);
  ASSERT_EQ(model.variables().size(), 2u);
  EXPECT_EQ(model.variables()[0].unique_id(), shared.kernel().unique_id());  // the object and the graph agree
  const Tensor in = uniform({2, 4}, 2);
  EXPECT_LT(max_diff(model(in), shared(shared(in))), 1e-7);
  // Keras numbers the second call node 1.
  const nlohmann::json config = model.get_config();
  EXPECT_EQ(config["layers"][1]["inbound_nodes"].size(), 2u);
  EXPECT_EQ(config["layers"][1]["inbound_nodes"][1]["args"][0]["config"]["keras_history"],
            nlohmann::json::array({"shared", 0, 0}));
  EXPECT_EQ(config["output_layers"], nlohmann::json::array({"shared", 1, 0}));
}

TEST(Functional, SkipConnectionsSeveralInputsAndOutputs) {
  clear_session();
  auto a = kl::InputLayer({4}, DType::float32, "a");
  auto b = kl::InputLayer({3}, DType::float32, "b");
  auto xa = kl::Dense(5, {.activation = "relu"})(a);
  auto xb = kl::Dense(5)(b);
  auto sum = kl::Add()({xa, xb});
  auto joined = kl::Concatenate()({sum, xa});  // xa used twice: a skip connection
  auto out1 = kl::Dense(2, {.name = "out1"})(joined);
  auto out2 = kl::Dense(1, {.name = "out2"})(xb);
  Model model({a, b}, {out1, out2});
  EXPECT_EQ(joined.shape(), Shape({10}));
  const Tensor ta = uniform({3, 4}, 3), tb = uniform({3, 3}, 4);
  std::vector<Tensor> y = model({ta, tb});
  ASSERT_EQ(y.size(), 2u);
  const Tensor ha = (*model.get_layer("dense"))(ta), hb = (*model.get_layer("dense_1"))(tb);
  const Tensor j = raw_ops::concat({ha + hb, ha}, 1);
  EXPECT_LT(max_diff(y[0], (*model.get_layer("out1"))(j)), 1e-6);
  EXPECT_LT(max_diff(y[1], (*model.get_layer("out2"))(hb)), 1e-6);
  EXPECT_NE(error_of([&] { model(ta); }).find("call it with a list"), std::string::npos);
  EXPECT_NE(error_of([&] { model(std::vector<Tensor>{ta}); }).find("expects 2 input(s), got 1"), std::string::npos);
}

// The order TF 2.21 gives for this graph: by depth from the outputs, then by first visit (checked with Keras).
TEST(Functional, LayersAndWeightsInKerasOrder) {
  clear_session();
  auto a = kl::InputLayer({4}, DType::float32, "a");
  kl::Dense late(3, {.name = "late"});
  auto x1 = kl::Dense(3, {.name = "x1"})(a);
  auto x2 = kl::Dense(3, {.name = "x2"})(x1);
  auto x3 = kl::Dense(3, {.name = "x3"})(x2);
  auto y = late(a);
  auto s = kl::Add("s")({x3, y});
  auto b = kl::InputLayer({3}, DType::float32, "b");
  auto t = kl::Add("t")({s, b});
  const std::vector<std::string> keras_order = {"a", "x1", "x2", "x3", "late", "s", "b", "t"};
  EXPECT_EQ(layer_names(Model({a, b}, t)), keras_order);
  EXPECT_EQ(layer_names(Model({b, a}, t)), keras_order);
  std::vector<std::string> weights;
  for (const Variable& v : Model({a, b}, t).variables()) weights.push_back(v.name());
  EXPECT_EQ(weights, (std::vector<std::string>{"x1/kernel", "x1/bias", "x2/kernel", "x2/bias", "x3/kernel", "x3/bias",
                                               "late/kernel", "late/bias"}));
}

Model small_classifier() {
  auto inputs = Input({6});
  auto h = kl::Dense(16, {.activation = "relu"})(inputs);
  auto skip = kl::Concatenate()({h, inputs});
  auto outputs = kl::Dense(3)(kl::LayerNormalization()(skip));
  return Model(inputs, outputs, "classifier");
}

TEST(Functional, FitsEvaluatesAndPredicts) {
  clear_session();
  utils::set_random_seed(7);
  Model model = small_classifier();
  const Tensor x = uniform({96, 6}, 5);
  std::vector<int64_t> labels;  // learnable: which feature is largest, mod 3
  for (int64_t i : raw_ops::cast(argmax(x, -1), DType::int64).to_vector<int64_t>()) labels.push_back(i % 3);
  const Tensor y = from_vector(labels, Shape{96});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto history = model.fit(x, y, {.epochs = 15, .batch_size = 16, .verbose = 0});
  ASSERT_EQ(history.history["loss"].size(), 15u);
  EXPECT_LT(history.history["loss"].back(), 0.8 * history.history["loss"].front());
  auto logs = model.evaluate(x, y, {.verbose = 0});
  EXPECT_GT(logs["accuracy"], 0.5);
  EXPECT_EQ(model.predict(x).shape(), Shape({96, 3}));
  const std::string summary = model.summary_string();
  EXPECT_NE(summary.find("Model: \"classifier\""), std::string::npos);
  EXPECT_NE(summary.find(" concatenate (Concatenate)   (None, 22)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Total params: 225"), std::string::npos) << summary;  // 112 + 44 + 69
}

// A text classifier on int32 tokens: the label is whether token 0 appears, which the embedding must learn.
TEST(Functional, EmbeddingModelTrainsOnIntegerTokens) {
  clear_session();
  utils::set_random_seed(3);
  auto tokens = kl::InputLayer({5}, DType::int32, "tokens");
  auto x = kl::LayerNormalization()(kl::Embedding(6, 4)(tokens));
  auto logits = kl::Dense(2)(kl::Dense(8, {.activation = "relu"})(kl::Flatten()(x)));
  Model model(tokens, logits);
  Philox rng(4);
  const Tensor ids = raw_ops::cast(random_uniform({64, 5}, rng, 0, 6, DType::float64), DType::int32);
  std::vector<int64_t> labels;
  const std::vector<int32_t> v = ids.to_vector<int32_t>();
  for (size_t i = 0; i < 64; ++i) labels.push_back(std::count(v.begin() + 5 * i, v.begin() + 5 * i + 5, 0) > 0);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto history = model.fit(ids, from_vector(labels, Shape{64}), {.epochs = 20, .batch_size = 16, .verbose = 0});
  EXPECT_LT(history.history["loss"].back(), 0.5 * history.history["loss"].front());
}

TEST(Functional, UpSampling2DEnlargesImagesInAModelAndRefusesWhatItLacks) {
  clear_session();
  auto image = Input({2, 2, 1});
  auto up = kl::UpSampling2D({2, 3}, {.interpolation = "bilinear"})(image);
  EXPECT_EQ(up.shape(), Shape({4, 6, 1}));
  Model model(image, kl::Conv2D(2, 3, {.padding = "same"})(up));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const Tensor x = uniform({3, 2, 2, 1}, 5);
  model.train_on_batch(x, uniform({3, 4, 6, 2}, 6));  // the gradient reaches the kernel through the resize
  EXPECT_EQ(model.optimizer()->iterations(), 1);
  const Tensor nearest = kl::UpSampling2D(2)(x);
  EXPECT_EQ(nearest.shape(), Shape({3, 4, 4, 1}));
  EXPECT_EQ(raw_ops::slice(nearest, {0, 1, 1, 0}, {1, 1, 1, 1}).item<float>(),
            raw_ops::slice(x, {0, 0, 0, 0}, {1, 1, 1, 1}).item<float>());
  EXPECT_NE(error_of([] {
              kl::UpSampling2D(2, {.interpolation = "bicubic"});
            }).find("interpolation=\"bicubic\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              kl::from_config({{"class_name", "UpSampling2D"}, {"config", {{"name", "up"}, {"size", {1, 2, 3}}}}});
            }).find("layer 'up' (UpSampling2D): size=[1,2,3]"),
            std::string::npos);
  const LayerPtr from_int = kl::from_config({{"class_name", "UpSampling2D"}, {"config", {{"size", 3}}}});
  EXPECT_EQ(from_int->compute_output_shape({2, 2, 1}), Shape({6, 6, 1}));
}

TEST(Functional, ConfigAndJsonRoundTrip) {
  clear_session();
  Model model = small_classifier();
  Model again = Model::from_config(model.get_config());
  EXPECT_EQ(again.get_config(), model.get_config());
  EXPECT_EQ(layer_names(again), layer_names(model));
  again.set_weights(model.get_weights());
  const Tensor x = uniform({4, 6}, 6);
  EXPECT_EQ(max_diff(again(x), model(x)), 0.0);
  Model from_json = models::model_from_json(model.to_json());
  EXPECT_EQ(from_json.to_json(), model.to_json());
  // Sequential JSON goes through the same function.
  Sequential seq({Input({3}), kl::Dense(2)});
  Model seq_again = models::model_from_json(seq.to_json());
  EXPECT_EQ(seq_again.variables().size(), 2u);
  EXPECT_EQ(seq_again.get_config(), seq.get_config());
}

TEST(Functional, SavesAndLoadsAsADirectory) {
  clear_session();
  Model model = small_classifier();
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  const std::string dir = (fs::temp_directory_path() / ("lockstep_functional_" + std::to_string(::getpid()))).string();
  model.save(dir);
  Model loaded = Model::load_model(dir);
  const Tensor x = uniform({4, 6}, 8);
  EXPECT_EQ(max_diff(loaded(x), model(x)), 0.0);
  EXPECT_NE(loaded.optimizer(), nullptr);
  EXPECT_NE(error_of([&] { Sequential::load_model(dir); }).find("is a functional model"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Functional, SequentialIsAModel) {
  clear_session();
  Model model = Sequential({Input({3}), kl::Dense(2)});
  EXPECT_EQ(model.predict(uniform({5, 3}, 9)).shape(), Shape({5, 2}));
  EXPECT_EQ(layer_names(model), (std::vector<std::string>{"dense"}));
  // Inside a functional model's Sequential-style Input list as before.
  Sequential seq({Input({3}), kl::Rescaling(0.5), kl::Dense(2)});
  EXPECT_EQ(seq.predict(uniform({5, 3}, 9)).shape(), Shape({5, 2}));
}

TEST(Functional, GraphErrorsNameTheProblem) {
  clear_session();
  auto a = Input({4});
  auto other = Input({4});
  auto y = kl::Dense(2)(other);
  EXPECT_NE(error_of([&] { (void)Model(a, y); }).find("graph disconnected"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)Model(y, y); }).find("must be keras::Input tensors"), std::string::npos);
  auto d1 = kl::Dense(2, {.name = "same"})(a);
  auto d2 = kl::Dense(2, {.name = "same"})(a);
  EXPECT_NE(error_of([&] { (void)Model(a, {d1, d2}); }).find("two layers are named \"same\""), std::string::npos);
  EXPECT_NE(error_of([&] { kl::Add()(a); }).find("needs a list of at least 2 inputs"), std::string::npos);
  EXPECT_NE(error_of([&] { kl::Add()({a, kl::Dense(3)(a)}); }).find("same shape"), std::string::npos);
  EXPECT_NE(error_of([&] { kl::Concatenate(0)({a, a}); }).find("batch axis"), std::string::npos);
  auto shared = std::make_shared<kl::Dense>(2);
  (*shared)(a);
  EXPECT_NE(error_of([&] { (*shared)(Input({5})); }).find("incompatible"), std::string::npos);
}

TEST(Functional, UnsupportedLayersAndOptionsAreOneClearError) {
  clear_session();
  EXPECT_NE(error_of([] { kl::Embedding(10, 4, {.mask_zero = true}); }).find("mask_zero=true is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              kl::GlobalAveragePooling2D({.data_format = "channels_first"});
            }).find("data_format=\"channels_first\" is not supported"),
            std::string::npos);
  const std::string unknown = error_of([] {
    kl::from_config({{"class_name", "LSTM"}, {"config", {{"name", "lstm_1"}, {"units", 4}}}});
  });
  EXPECT_NE(unknown.find("layer 'lstm_1': layer class 'LSTM' is not supported"), std::string::npos) << unknown;
  const std::string option = error_of([] {
    kl::from_config({{"class_name", "LayerNormalization"}, {"config", {{"name", "ln"}, {"rms_scaling", true}}}});
  });
  EXPECT_NE(option.find("LayerNormalization layer \"ln\": rms_scaling=true"), std::string::npos) << option;
  const std::string reg = error_of([] {
    nlohmann::json c = {{"name", "emb"}, {"input_dim", 3}, {"output_dim", 2}};
    c["embeddings_initializer"] = {{"class_name", "RandomUniform"}, {"config", nlohmann::json::object()}};
    c["embeddings_regularizer"] = {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}};
    kl::from_config({{"class_name", "Embedding"}, {"config", c}});
  });
  EXPECT_NE(reg.find("layer 'emb' (Embedding): embeddings_regularizer="), std::string::npos) << reg;
}

TEST(Functional, EmbeddingGradientAddsIntoTheLookedUpRows) {
  clear_session();
  kl::Embedding emb(5, 2);
  const Tensor ids = from_vector(std::vector<int64_t>{1, 3, 1, 1}, Shape{2, 2});
  const Tensor w = uniform({2, 2, 2}, 10);
  GradientTape tape;
  Tensor loss = reduce_sum(emb(ids) * w);
  std::vector<Tensor> g = tape.gradient(loss, std::vector<Variable>{emb.embeddings()});
  auto gv = g[0].to_vector<float>(), wv = w.to_vector<float>();
  // Row 1 is looked up three times (positions 0, 2, 3), row 3 once, the others never.
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(gv[2 + c], wv[0 + c] + wv[4 + c] + wv[6 + c], 1e-6);
    EXPECT_NEAR(gv[6 + c], wv[2 + c], 1e-6);
    EXPECT_EQ(gv[0 + c], 0.0f);
    EXPECT_EQ(gv[8 + c], 0.0f);
  }
  // Float ids are cast, as Keras does; an out-of-range id is an error.
  EXPECT_EQ(max_diff(emb(raw_ops::cast(ids, DType::float32)), emb(ids)), 0.0);
  EXPECT_NE(error_of([&] {
              emb(from_vector(std::vector<int64_t>{0, 5}, Shape{1, 2}));
            }).find("out of range"),
            std::string::npos);
}

// docs/api.md's example, as written there.
TEST(Functional, DocumentedSkipConnectionCnn) {
  clear_session();
  auto image = keras::Input({32, 32, 3});
  auto x = layers::Conv2D(16, 3, {.padding = "same", .activation = "relu"})(layers::Rescaling(1.0 / 255)(image));
  x = layers::Add()({x, layers::Conv2D(16, 3, {.padding = "same"})(x)});
  auto logits = layers::Dense(10)(layers::GlobalAveragePooling2D()(x));
  keras::Model model(image, logits);
  EXPECT_EQ(model(raw_ops::cast(uniform({2, 32, 32, 3}, 11) * 100.0 + 100.0, DType::uint8)).shape(), Shape({2, 10}));
  EXPECT_EQ(model.count_params(), 448 + 2320 + 170);
}

// fit() of a functional model with Dropout and a skip connection; under `strategy` when given, with
// BackupAndRestore in `backup_dir` when given.
std::vector<Tensor> fit_functional(distribute::Strategy* strategy, const std::string& backup_dir, int64_t crash_at,
                                   bool dropout = true) {
  clear_session();
  utils::set_random_seed(7);
  Philox rng(3);
  Tensor x = random_normal({64, 4}, rng, 0, 1);
  Tensor y = raw_ops::cast(random_uniform({64}, rng, 0, 3, DType::float64), DType::int64);
  data::Dataset ds = data::Dataset::from_tensor_slices(x, y).shuffle(64, 5).batch(8);
  std::optional<Model> model;
  {
    std::optional<distribute::Strategy::Scope> scope;
    if (strategy) scope.emplace(strategy);
    auto inputs = Input({4});
    auto h = kl::Dense(16, {.activation = "relu"})(inputs);
    auto skip = kl::Concatenate()({dropout ? kl::Dropout(0.2, {.seed = 1})(h) : h, inputs});
    model.emplace(inputs, kl::Dense(3)(skip));
    model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  }
  std::vector<CallbackPtr> cbs;
  if (!backup_dir.empty()) cbs.push_back(callbacks::BackupAndRestore({.backup_dir = backup_dir, .save_freq = 3}));
  if (crash_at > 0) cbs.push_back(std::make_shared<CrashAt>(crash_at));
  model->fit(ds, {.epochs = 2, .callbacks = cbs, .verbose = 0});
  return model->get_weights();
}

TEST(Functional, BackupAndRestoreResumesBitwise) {
  const testing::TestDir temp("lockstep_functional_backup");
  const std::string dir = temp.str() + "/backup";
  const std::vector<Tensor> reference = fit_functional(nullptr, "", 0);
  EXPECT_THROW(fit_functional(nullptr, dir, 11), Crash);
  const std::vector<Tensor> resumed = fit_functional(nullptr, dir, 0);
  ASSERT_EQ(resumed.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i)
    EXPECT_EQ(resumed[i].to_vector<float>(), reference[i].to_vector<float>());
}

// Built in a strategy's scope, the model's variables are mirrored: two replicas, each on half of every batch,
// train as one (without Dropout, whose replicas draw different streams).
TEST(Functional, TwoReplicasTrainAsOne) {
  const std::vector<Tensor> single = fit_functional(nullptr, "", 0, false);
  distribute::MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
  const std::vector<Tensor> mirrored = fit_functional(&strategy, "", 0, false);
  ASSERT_EQ(mirrored.size(), single.size());
  for (size_t i = 0; i < single.size(); ++i) EXPECT_LT(max_diff(mirrored[i], single[i]), 1e-5) << "variable " << i;
}

}  // namespace
}  // namespace lockstep::keras
