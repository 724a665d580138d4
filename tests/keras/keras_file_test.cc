// Keras 3 .keras archives both ways: TensorFlow-written golden files (tests/golden/make_keras_file_golden.py)
// load, predict, hold TF's optimizer state and take the same next step; lockstep's archives round-trip, are read
// by TensorFlow (when the test venv has it), and damaged or unsupported ones are one clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../two_workers.h"
#include "../interop_python.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/saving.h"
#include "lockstep/tensor/ops.h"
#include "../error_of.h"

namespace lockstep::keras {
namespace {

namespace fs = std::filesystem;
namespace kl = layers;
using nlohmann::json;

const fs::path kGolden = fs::path(LOCKSTEP_SOURCE_DIR) / "tests/golden";

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((fs::temp_directory_path() / ("lockstep_keras_file_" + std::to_string(getpid()) + "_" + name)).string()) {}
  ~TempFile() { fs::remove_all(path); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// ---- a stored-only zip, enough to take an archive apart and put it back together changed ----

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}
uint32_t le(const std::string& s, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}
void put(std::string& s, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// The members of an archive of stored members with sizes in their local headers (what Keras and lockstep write).
std::vector<std::pair<std::string, std::string>> unzip_stored(const std::string& zip) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t at = 0; at + 30 <= zip.size() && le(zip, at, 4) == 0x04034b50;) {
    EXPECT_EQ(le(zip, at + 8, 2), 0u) << "member not stored";
    const uint32_t size = le(zip, at + 18, 4), name_len = le(zip, at + 26, 2), extra = le(zip, at + 28, 2);
    out.emplace_back(zip.substr(at + 30, name_len), zip.substr(at + 30 + name_len + extra, size));
    at += 30 + name_len + extra + size;
  }
  return out;
}

std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out, directory;
  for (const auto& [name, data] : members) {
    const uint32_t offset = static_cast<uint32_t>(out.size()), crc = crc32(data),
                   size = static_cast<uint32_t>(data.size());
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, size, 4), put(out, size, 4), put(out, static_cast<uint32_t>(name.size()), 2),
        put(out, 0, 2);
    out += name + data;
    put(directory, 0x02014b50, 4), put(directory, 20, 2), put(directory, 20, 2), put(directory, 0, 2),
        put(directory, 0, 2);
    put(directory, 0, 4), put(directory, crc, 4), put(directory, size, 4), put(directory, size, 4);
    put(directory, static_cast<uint32_t>(name.size()), 2), put(directory, 0, 2), put(directory, 0, 2),
        put(directory, 0, 2);
    put(directory, 0, 2), put(directory, 0, 4), put(directory, offset, 4);
    directory += name;
  }
  const uint32_t directory_at = static_cast<uint32_t>(out.size());
  out += directory;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, static_cast<uint32_t>(members.size()), 2);
  put(out, static_cast<uint32_t>(members.size()), 2), put(out, static_cast<uint32_t>(directory.size()), 4);
  put(out, directory_at, 4), put(out, 0, 2);
  return out;
}

// ---- golden values ----

const json& golden() {
  static const json g = [] {
    std::ifstream in(kGolden / "keras_file_golden.json");
    return json::parse(in);
  }();
  return g;
}

// A nested JSON list of numbers as a float32 tensor.
Tensor tensor_of(const json& j) {
  std::vector<int64_t> dims;
  for (const json* p = &j; p->is_array(); p = &(*p)[0]) dims.push_back(static_cast<int64_t>(p->size()));
  std::vector<float> values;
  std::function<void(const json&)> flatten = [&](const json& v) {
    if (v.is_array())
      for (const json& e : v) flatten(e);
    else
      values.push_back(v.get<float>());
  };
  flatten(j);
  return from_vector(values, Shape(dims));
}

void expect_near(const Tensor& got, const json& want, double tolerance, const std::string& what) {
  const Tensor w = tensor_of(want);
  ASSERT_EQ(got.shape(), w.shape()) << what;
  const std::vector<float> a = got.to_vector<float>(), b = w.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tolerance * std::max(1.0, std::abs(double(b[i])))) << what << " element " << i;
}

class TfArchive : public ::testing::TestWithParam<std::string> {};

TEST_P(TfArchive, LoadsPredictsAndHoldsTheOptimizerState) {
  const json& g = golden()["models"][GetParam()];
  Model model = models::load_model((kGolden / g["file"].get<std::string>()).string());
  expect_near(model.predict(tensor_of(g["x_pred"])), g["y_pred"], 1e-6, "predictions");
  // lockstep writes back the config TF wrote (less the ids Keras gives shared objects).
  const auto members = unzip_stored(read_bytes((kGolden / g["file"].get<std::string>()).string()));
  json tf_config = json::parse(members.at(1).second)["config"];
  std::function<void(json&)> strip = [&](json& j) {
    if (j.is_object()) j.erase("shared_object_id");
    for (json& e : j)
      if (e.is_structured()) strip(e);
  };
  strip(tf_config);
  EXPECT_EQ(model.get_config(), tf_config) << "lockstep: " << model.get_config().dump() << "\nTF: " << tf_config.dump();

  // model_from_json(model.to_json()) gives the same architecture.
  const Model from_json = models::model_from_json(g["to_json"].get<std::string>());
  EXPECT_EQ(from_json.get_config(), model.get_config());
  EXPECT_EQ(from_json.count_params(), model.count_params());
  EXPECT_THROW(models::model_from_json("{\"class_name\": \"Functional\", \"config\": {}}"), ValueError);

  ASSERT_TRUE(model.optimizer());
  EXPECT_EQ(model.optimizer()->iterations(), g["iterations"].get<int64_t>());
  // Each of TF's slot variables ("adam/sequential_dense_kernel_momentum") against lockstep's
  // ("adam/dense/kernel/momentum") by name, shape and digest.
  std::map<std::string, Tensor> slots;
  for (auto& [name, t] : model.optimizer()->state()) {
    std::string keras = name.substr(name.find('/') + 1);
    std::replace(keras.begin(), keras.end(), '/', '_');
    slots[model.optimizer()->name() + "/" + model.name() + "_" + keras] = t;
  }
  size_t compared = 0;
  for (const json& v : g["optimizer_variables"]) {
    const std::string path = v["path"];
    if (path.ends_with("/iteration") || path.ends_with("/learning_rate")) continue;
    ASSERT_TRUE(slots.count(path)) << path << " has no counterpart in lockstep's optimizer";
    const Tensor& t = slots[path];
    EXPECT_EQ(t.shape().dims(), v["shape"].get<std::vector<int64_t>>()) << path;
    double sum = 0, abs_sum = 0;
    for (float x : t.to_vector<float>()) sum += x, abs_sum += std::abs(x);
    EXPECT_NEAR(sum, v["sum"].get<double>(), 1e-6 * std::max(1.0, v["abs_sum"].get<double>())) << path;
    EXPECT_NEAR(abs_sum, v["abs_sum"].get<double>(), 1e-6 * std::max(1.0, v["abs_sum"].get<double>())) << path;
    ++compared;
  }
  EXPECT_EQ(compared + 2, g["optimizer_variables"].size());

  if (!g.contains("x_step")) return;  // a model with Dropout: TF's next step is random
  const Tensor y_step = cast(tensor_of(g["y_step"]), DType::int64);
  const auto logs = model.train_on_batch(tensor_of(g["x_step"]),
                                         GetParam() == "mlp_rmsprop_centered" ? tensor_of(g["y_step"]) : y_step);
  EXPECT_NEAR(logs.at("loss"), g["step_loss"].get<double>(), 1e-5);
  expect_near(model.predict(tensor_of(g["x_pred"])), g["y_pred_after_step"], 1e-5, "predictions after one more step");
}

INSTANTIATE_TEST_SUITE_P(KerasFile, TfArchive,
                         ::testing::Values("cnn_adam", "bn_sgd_momentum", "mlp_rmsprop_centered"));

// ---- lockstep's own archives ----

Sequential trained_cnn() {
  utils::set_random_seed(5);
  Sequential model({Input({6, 6}), kl::Reshape({6, 6, 1}), kl::Conv2D(3, 3, {.padding = "same", .activation = "relu"}),
                    kl::BatchNormalization(), kl::MaxPooling2D(), kl::Flatten(), kl::Dense(8, {.activation = "relu"}),
                    kl::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  Philox rng(3);
  const Tensor x = random_uniform({32, 6, 6}, rng, 0, 1, DType::float32);
  const Tensor y = cast(random_uniform({32}, rng, 0, 3, DType::float32), DType::int64);
  model.fit(x, y, {.epochs = 2, .batch_size = 8, .shuffle = false, .verbose = 0});
  return model;
}

TEST(KerasFile, RoundTripKeepsWeightsOptimizerStateAndTraining) {
  TempFile file("roundtrip.keras");
  Sequential model = trained_cnn();
  model.save(file.path);
  const std::vector<std::pair<std::string, std::string>> members = unzip_stored(read_bytes(file.path));
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].first, "metadata.json");
  EXPECT_EQ(members[1].first, "config.json");
  EXPECT_EQ(members[2].first, "model.weights.h5");
  const json doc = json::parse(members[1].second);
  EXPECT_EQ(doc["class_name"], "Sequential");
  EXPECT_EQ(doc["config"]["layers"][0]["class_name"], "InputLayer");
  EXPECT_EQ(doc["config"]["layers"][2]["config"]["dilation_rate"], json({1, 1}));
  EXPECT_EQ(doc["compile_config"]["loss"]["config"]["reduction"], "sum_over_batch_size");

  Model loaded = models::load_model(file.path);
  Philox rng(9);
  const Tensor x = random_uniform({8, 6, 6}, rng, 0, 1, DType::float32);
  const Tensor y = cast(random_uniform({8}, rng, 0, 3, DType::float32), DType::int64);
  EXPECT_EQ(loaded.predict(x).to_vector<float>(), model.predict(x).to_vector<float>());
  ASSERT_TRUE(loaded.optimizer());
  EXPECT_EQ(loaded.optimizer()->iterations(), 8);
  const auto a = model.optimizer()->state(), b = loaded.optimizer()->state();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].second.to_vector<float>(), b[i].second.to_vector<float>()) << a[i].first;
  // One more step of each: the same weights.
  model.train_on_batch(x, y);
  loaded.train_on_batch(x, y);
  EXPECT_EQ(loaded.predict(x).to_vector<float>(), model.predict(x).to_vector<float>());

  // The directory format is still there for any other path.
  TempFile dir("roundtrip_dir");
  models::save_model(model, dir.path);
  EXPECT_TRUE(fs::exists(dir.path + "/config.json"));
  EXPECT_EQ(models::load_model(dir.path).predict(x).to_vector<float>(), model.predict(x).to_vector<float>());
}

TEST(KerasFile, WeightsFilesAreTheArchivesWeightsMember) {
  TempFile archive("weights.keras"), weights("model.weights.h5");
  Sequential model = trained_cnn();
  model.save(archive.path);
  model.save_weights(weights.path);
  // Keras 3's save_weights writes what the archive holds as model.weights.h5 (optimizer included).
  EXPECT_EQ(read_bytes(weights.path).size(), unzip_stored(read_bytes(archive.path))[2].second.size());

  Sequential other = trained_cnn();
  other.load_weights(weights.path);
  Philox rng(4);
  const Tensor x = random_uniform({4, 6, 6}, rng, 0, 1, DType::float32);
  EXPECT_EQ(other.predict(x).to_vector<float>(), model.predict(x).to_vector<float>());
  EXPECT_EQ(other.optimizer()->iterations(), model.optimizer()->iterations());
  EXPECT_THROW(other.load_weights(weights.path + ".absent.weights.h5"), NotFoundError);
}

using lockstep::testing::error_of;

TEST(KerasFile, DamagedArchivesAreOneErrorNamingFileAndMember) {
  const std::string tf_file = (kGolden / "keras_file_cnn_adam.keras").string();
  const auto members = unzip_stored(read_bytes(tf_file));
  ASSERT_EQ(members.size(), 3u);
  TempFile file("damaged.keras");
  auto load = [&] { models::load_model(file.path); };

  EXPECT_THROW(models::load_model(file.path), NotFoundError);
  write_bytes(file.path, read_bytes(tf_file).substr(0, 5000));  // truncated
  EXPECT_THROW(load(), DataLossError);
  EXPECT_NE(error_of(load).find(file.path), std::string::npos);

  std::string flipped = read_bytes(tf_file);
  flipped[flipped.find("HDF") + 2000] ^= 0x40;  // a byte of the weights: the CRC no longer matches
  write_bytes(file.path, flipped);
  EXPECT_THROW(load(), DataLossError);

  write_bytes(file.path, zip_stored({members[0], members[1]}));  // no model.weights.h5
  EXPECT_THROW(load(), DataLossError);
  EXPECT_NE(error_of(load).find("model.weights.h5"), std::string::npos) << error_of(load);

  // A config whose Dense has more units than the saved kernel: a shape mismatch naming the member.
  json doc = json::parse(members[1].second);
  doc["config"]["layers"][5]["config"]["units"] = 17;
  write_bytes(file.path, zip_stored({members[0], {"config.json", doc.dump()}, members[2]}));
  const std::string m = error_of(load);
  EXPECT_NE(m.find("layers/dense/vars/0"), std::string::npos) << m;
  EXPECT_THROW(load(), ValueError);

  write_bytes(file.path, zip_stored({members[0], {"config.json", "{not json"}, members[2]}));
  EXPECT_THROW(load(), DataLossError);
}

TEST(KerasFile, UnsupportedLayersAndOptionsAreNamed) {
  const auto members = unzip_stored(read_bytes((kGolden / "keras_file_cnn_adam.keras").string()));
  TempFile file("unsupported.keras");
  auto with_config = [&](const std::function<void(json&)>& change) {
    json doc = json::parse(members[1].second);
    change(doc);
    write_bytes(file.path, zip_stored({members[0], {"config.json", doc.dump()}, members[2]}));
    return error_of([&] { models::load_model(file.path); });
  };
  std::string m = with_config([](json& d) { d["config"]["layers"][2]["config"]["dilation_rate"] = {2, 2}; });
  EXPECT_NE(m.find("conv2d"), std::string::npos) << m;
  EXPECT_NE(m.find("dilation_rate"), std::string::npos) << m;
  m = with_config([](json& d) { d["config"]["layers"][3]["config"]["data_format"] = "channels_first"; });
  EXPECT_NE(m.find("max_pooling2d"), std::string::npos) << m;
  EXPECT_NE(m.find("channels_first"), std::string::npos) << m;
  m = with_config([](json& d) { d["config"]["layers"][2]["class_name"] = "SeparableConv2D"; });
  EXPECT_NE(m.find("SeparableConv2D"), std::string::npos) << m;
  m = with_config([](json& d) { d["compile_config"]["optimizer"]["config"]["clipnorm"] = 1.0; });
  EXPECT_NE(m.find("clipnorm"), std::string::npos) << m;
  // Loading without compiling skips the compile config.
  EXPECT_NO_THROW(models::load_model(file.path, {.compile = false}));
}

// Two workers (threads, each with its own MultiWorkerMirroredStrategy): the chief alone writes the archive,
// and loading it needs it on the chief only (it reads and broadcasts), as for the directory format.
TEST(KerasFile, MultiWorkerSaveOnTheChiefAndLoadWithoutASharedFile) {
  TempFile chief_file("chief.keras"), other_file("other.keras");
  Philox rng(6);
  const Tensor x = random_uniform({32, 6}, rng, 0, 1, DType::float32);
  const Tensor y = cast(random_uniform({32}, rng, 0, 3, DType::float32), DType::int64);
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y).batch(8);
  std::vector<std::vector<float>> trained(2), loaded(2);
  std::vector<int64_t> iterations(2);
  auto worker = [&](int rank, distribute::MultiWorkerMirroredStrategy& strategy) {
    const std::string& mine = rank == 0 ? chief_file.path : other_file.path;
    Sequential model;
    {
      auto scope = strategy.scope();
      model = Sequential(
          {Input({6}), kl::Dense(8, {.activation = "relu", .name = "hidden"}), kl::Dense(3, {.name = "logits"})});
      model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}),
                     .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    }
    model.fit(ds, {.epochs = 1, .verbose = 0});
    trained[static_cast<size_t>(rank)] = model.predict(x).to_vector<float>();
    model.save(mine);
    auto scope = strategy.scope();
    Model back = models::load_model(mine);
    loaded[static_cast<size_t>(rank)] = back.predict(x).to_vector<float>();
    iterations[static_cast<size_t>(rank)] = back.optimizer()->iterations();
    back.fit(ds, {.epochs = 1, .verbose = 0});  // the restored optimizer trains on 2 workers
  };
  const std::vector<std::string> errors = testing::on_two_workers(worker);
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_TRUE(fs::exists(chief_file.path));
  EXPECT_FALSE(fs::exists(other_file.path)) << "a non-chief worker wrote a model file";
  EXPECT_EQ(loaded[0], trained[0]);
  EXPECT_EQ(loaded[1], trained[0]);
  EXPECT_EQ(iterations, (std::vector<int64_t>{4, 4}));
}

// ---- TensorFlow reads lockstep's archive ----

TEST(KerasFile, TensorFlowLoadsLockstepsArchive) {
  std::string why;
  const std::string python = testing::interop_python("tensorflow", why);
  if (python.empty()) GTEST_SKIP() << why;
  TempFile file("for_tf.keras"), inputs("for_tf_inputs.json"), out("for_tf_out.json"), script("for_tf.py");
  Sequential model = trained_cnn();
  model.save(file.path);
  Philox rng(4);
  const Tensor x = random_uniform({5, 6, 6}, rng, 0, 1, DType::float32);
  write_bytes(inputs.path, json(x.to_vector<float>()).dump());
  write_bytes(script.path, R"(import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
model = keras.models.load_model(sys.argv[1])
x = np.array(json.load(open(sys.argv[2])), dtype=np.float32).reshape(5, 6, 6)
opt = model.optimizer
json.dump({"y": model.predict(x, verbose=0).ravel().tolist(), "optimizer": type(opt).__name__,
           "iterations": int(opt.iterations.numpy()), "learning_rate": float(opt.learning_rate.numpy()),
           "slots": [float(np.abs(v.numpy()).sum()) for v in opt.variables[2:]],
           "loss": type(model.loss).__name__}, open(sys.argv[3], "w"))
)");
  const std::string command =
      python + " " + script.path + " " + file.path + " " + inputs.path + " " + out.path + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const json r = json::parse(read_bytes(out.path));
  const std::vector<float> want = model.predict(x).to_vector<float>();
  const std::vector<float> got = r["y"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0f, std::abs(want[i]))) << i;
  EXPECT_EQ(r["optimizer"], "Adam");
  EXPECT_EQ(r["iterations"], 8);
  EXPECT_NEAR(r["learning_rate"].get<double>(), 0.01, 1e-9);
  EXPECT_EQ(r["loss"], "SparseCategoricalCrossentropy");
  // Adam's moments came across: TF's slots hold what lockstep's do (|sum| of each, Keras' order: m, v per variable).
  std::vector<double> slots;
  const auto state = model.optimizer()->state();
  for (size_t i = 1; i < state.size(); ++i) {
    double s = 0;
    for (float v : state[i].second.to_vector<float>()) s += std::abs(v);
    slots.push_back(s);
  }
  ASSERT_EQ(r["slots"].size(), slots.size());
  for (size_t i = 0; i < slots.size(); ++i)
    EXPECT_NEAR(r["slots"][i].get<double>(), slots[i], 1e-5 * std::max(1.0, slots[i])) << i;
}

// A functional model of two inputs with the layers of typical Keras models, saved by lockstep, is loaded by TF and
// predicts the same; TF saves it again and lockstep loads TF's archive and predicts the same: both ways, in one test.
TEST(KerasFile, FunctionalArchivesGoBothWaysWithTensorFlow) {
  std::string why;
  const std::string python = testing::interop_python("tensorflow", why);
  if (python.empty()) GTEST_SKIP() << why;
  TempFile mine("functional.keras"), theirs("functional_tf.keras"), inputs("functional_inputs.json"),
      out("functional_out.json"), script("functional.py");
  auto image = Input({6, 6, 1});
  auto tokens = Input({5}, DType::int32);
  auto x = kl::Conv2D(4, 3, {.padding = "same", .activation = "relu"})(kl::Rescaling(0.5, 0.1)(image));
  x = kl::Add()({x, kl::LayerNormalization()(kl::Conv2D(4, 3, {.padding = "same"})(x))});
  auto pooled = kl::Concatenate()({kl::GlobalAveragePooling2D()(x), kl::GlobalMaxPooling2D()(x)});
  auto words = kl::Dense(4, {.activation = "tanh"})(kl::Flatten()(kl::Embedding(10, 3)(tokens)));
  Model model({image, tokens}, kl::Dense(3)(kl::Concatenate()({pooled, words})));
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  model.save(mine.path);

  Philox rng(5);
  const Tensor xi = random_uniform({4, 6, 6, 1}, rng, 0, 1, DType::float32);
  std::vector<int32_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back((i * 7) % 10);
  const Tensor xt = from_data(ids.data(), Shape({4, 5}), DType::int32);
  write_bytes(inputs.path, json({{"image", xi.to_vector<float>()}, {"tokens", ids}}).dump());
  write_bytes(script.path, R"(import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
model = keras.models.load_model(sys.argv[1])
d = json.load(open(sys.argv[2]))
x = [np.array(d["image"], dtype=np.float32).reshape(4, 6, 6, 1), np.array(d["tokens"], dtype=np.int32).reshape(4, 5)]
model.save(sys.argv[4])
json.dump({"y": model.predict(x, verbose=0).ravel().tolist()}, open(sys.argv[3], "w"))
)");
  const std::string command = python + " " + script.path + " " + mine.path + " " + inputs.path + " " + out.path + " " +
                              theirs.path + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::vector<float> want = model({xi, xt})[0].to_vector<float>();
  const std::vector<float> tf = json::parse(read_bytes(out.path))["y"].get<std::vector<float>>();
  const std::vector<float> back = models::load_model(theirs.path)({xi, xt})[0].to_vector<float>();
  ASSERT_EQ(tf.size(), want.size());
  ASSERT_EQ(back.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(tf[i], want[i], 1e-6 * std::max(1.0f, std::abs(want[i]))) << i;
    EXPECT_NEAR(back[i], want[i], 1e-6 * std::max(1.0f, std::abs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace lockstep::keras
