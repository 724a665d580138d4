// keras::utils::image_dataset_from_directory against Keras 3.15's image_dataset_from_directory on the committed
// tree (tests/golden/image_data, values in image_golden.json from make_image_golden.py): printed lines, class
// names, file order (numpy's shuffle included), validation split, labels and images; iterator state; and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../golden/image_golden.h"
#include "lockstep/data/dataset_node.h"
#include "lockstep/data/images.h"
#include "lockstep/data/readers.h"
#include "lockstep/keras/utils.h"

namespace lockstep::keras::utils {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Decoding and resizing are bit-identical to TF's (tests/data/images_test.cc), JPEG included.
constexpr float kTolerance = 0;

using image_golden::error_of;
using image_golden::golden;
using image_golden::image_root;

ImageDatasetOptions options_from(const json& kw) {
  ImageDatasetOptions o;
  o.verbose = true;
  if (kw.contains("labels") && kw["labels"].is_null()) o.labels.reset();
  if (kw.contains("label_mode")) o.label_mode = kw["label_mode"].get<std::string>();
  if (kw.contains("class_names")) o.class_names = kw["class_names"].get<std::vector<std::string>>();
  if (kw.contains("color_mode")) o.color_mode = kw["color_mode"];
  if (kw.contains("batch_size")) {
    if (kw["batch_size"].is_null())
      o.batch_size.reset();
    else
      o.batch_size = kw["batch_size"].get<int64_t>();
  }
  const auto size = kw.at("image_size").get<std::vector<int64_t>>();
  o.image_size = {size[0], size[1]};
  if (kw.contains("shuffle")) o.shuffle = kw["shuffle"];
  if (kw.contains("seed")) o.seed = kw["seed"].get<uint32_t>();
  if (kw.contains("validation_split")) o.validation_split = kw["validation_split"];
  if (kw.contains("subset")) o.subset = kw["subset"].get<std::string>();
  if (kw.contains("interpolation")) o.interpolation = kw["interpolation"];
  if (kw.contains("crop_to_aspect_ratio")) o.crop_to_aspect_ratio = kw["crop_to_aspect_ratio"];
  return o;
}

std::string relative(const std::string& path) {
  return fs::relative(path, image_root()).string();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// One yielded image or label of a batch (or the element itself when unbatched).
std::vector<float> row(const Tensor& t, bool batched, int64_t i) {
  const std::vector<float> all = t.to_vector<float>();
  if (!batched) return all;
  const size_t per = all.size() / static_cast<size_t>(t.dim(0));
  return {all.begin() + static_cast<std::ptrdiff_t>(per * size_t(i)),
          all.begin() + static_cast<std::ptrdiff_t>(per * size_t(i + 1))};
}

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// What TF yields for one dataset, epoch after epoch (a shuffled set draws a new order per iterator, as TF's):
// batch sizes, the file behind every image (compared pixel for pixel with TF's image of that file), and labels.
void expect_matches(const ImageDataset& ds, const json& rec, const json& images) {
  EXPECT_EQ(ds.class_names, rec.at("class_names").is_null() ? std::vector<std::string>{}
                                                            : rec["class_names"].get<std::vector<std::string>>());
  std::vector<std::string> files;
  for (const std::string& p : ds.file_paths) files.push_back(relative(p));
  ASSERT_EQ(files, rec.at("file_paths").get<std::vector<std::string>>());
  const json& epochs = rec.at("epochs");
  for (size_t epoch = 0; epoch < epochs.size(); ++epoch) {
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    std::vector<json> batches, labels;
    std::vector<std::vector<float>> yielded;
    data::Iterator it = ds.dataset.make_iterator(epoch);
    while (std::optional<data::Element> e = it.next()) {
      EXPECT_EQ(dtype_name(e->x().dtype()), rec.at("dtype").get<std::string>());
      const bool batched = e->x().rank() == 4;
      const int64_t n = batched ? e->x().dim(0) : 1;
      batches.push_back(batched ? json(n) : json(nullptr));
      for (int64_t i = 0; i < n; ++i) {
        yielded.push_back(row(e->x(), batched, i));
        if (!e->y().defined()) continue;
        const std::vector<float> y = row(e->y(), batched, i);
        if (e->y().dtype() == DType::int32)
          labels.push_back(static_cast<int>(y[0]));
        else
          labels.push_back(y);
      }
    }
    EXPECT_EQ(json(batches), rec.at("batches"));
    EXPECT_EQ(json(labels), epochs[epoch].at("labels"));
    const auto order = epochs[epoch].at("order").get<std::vector<std::string>>();
    ASSERT_EQ(yielded.size(), order.size());
    for (size_t k = 0; k < order.size(); ++k)
      EXPECT_LE(max_difference(yielded[k], images.at(order[k]).get<std::vector<float>>()), kTolerance)
          << "element " << k << " should be " << order[k];
  }
}

TEST(ImageDatasetFromDirectory, MatchesKerasForEveryGoldenOptionSet) {
  for (const auto& [name, config] : golden().at("datasets").items()) {
    SCOPED_TRACE(name);
    const ImageDatasetOptions o = options_from(config.at("options"));
    const json& images = golden().at("images");
    const json& recs = config.at("datasets");
    ::testing::internal::CaptureStdout();
    std::vector<ImageDataset> made;
    if (o.subset == "both") {
      auto [train, val] = image_dataset_from_directory_both(image_root(), o);
      made = {train, val};
    } else {
      made = {image_dataset_from_directory(image_root(), o)};
    }
    const std::string printed = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(json(lines(printed)), config.at("printed"));
    ASSERT_EQ(made.size(), recs.size());
    for (size_t k = 0; k < made.size(); ++k)
      expect_matches(made[k], recs[k], images.at(recs[k].at("image_key").get<std::string>()));
  }
}

// A scratch folder (removed afterwards) with files that only need to exist: indexing never opens them.
struct ScratchTree {
  fs::path root = fs::temp_directory_path() / ("lockstep_image_dataset_test_" + std::to_string(getpid()));
  ScratchTree() { fs::create_directories(root); }
  ~ScratchTree() { fs::remove_all(root); }
  std::string path() const { return root.string(); }
  void touch(const std::string& rel, const std::vector<uint8_t>& bytes = {}) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  void copy(const std::string& golden_rel, const std::string& rel) const {
    fs::create_directories((root / rel).parent_path());
    fs::copy_file(image_root() + "/" + golden_rel, root / rel);
  }
};

TEST(ImageDatasetFromDirectory, FileOrderFollowsNumpyRandomStateShuffle) {
  ScratchTree tree;
  char name[32];
  for (const json& s : golden().at("numpy_shuffle")) {
    const auto n = s.at("n").get<int>();
    for (int i = 0; i < n; ++i) {
      std::snprintf(name, sizeof name, "c/f%03d.png", i);
      tree.touch(name);
    }
    const ImageDataset ds =
        image_dataset_from_directory(tree.path(), {.seed = s.at("seed").get<uint32_t>(), .verbose = false});
    std::vector<int> order;
    for (const std::string& p : ds.file_paths) order.push_back(std::stoi(p.substr(p.size() - 7, 3)));
    EXPECT_EQ(json(order), s.at("permutation")) << "n=" << n << " seed=" << s.at("seed");
    fs::remove_all(tree.root / "c");
  }
}

// data::Dataset::range(n).shuffle(b, seed) in TF's order, as the shuffled file indices come out for iterator 0, 1, 2.
TEST(ImageDatasetFromDirectory, ShufflesEachEpochInTensorFlowsOrder) {
  ScratchTree tree;
  char name[32];
  for (const json& s : golden().at("tf_shuffle")) {
    const auto n = s.at("n").get<int>(), buffer_size = s.at("buffer_size").get<int>();
    ASSERT_EQ(buffer_size % 8, 0);
    for (int i = 0; i < n; ++i) {
      std::snprintf(name, sizeof name, "c/f%03d.png", i);
      tree.touch(name);
    }
    const ImageDataset ds = image_dataset_from_directory(
        tree.path(), {.batch_size = buffer_size / 8, .seed = s.at("seed").get<uint32_t>(), .verbose = false});
    // Which file each element will read: the map step's input, i.e. the node below map.
    const data::Dataset indices(ds.dataset.node().inputs()[0]->inputs()[0]->inputs()[0]);
    ASSERT_EQ(indices.node().op(), "tf_shuffled_range");
    for (size_t epoch = 0; epoch < s.at("epochs").size(); ++epoch) {
      std::vector<int64_t> order;
      data::Iterator it = indices.make_iterator(epoch);
      while (auto e = it.next()) order.push_back(e->x().item<int64_t>());
      EXPECT_EQ(json(order), s.at("epochs")[epoch]) << "n=" << n << " epoch " << epoch;
    }
    fs::remove_all(tree.root / "c");
  }
}

TEST(ImageDatasetFromDirectory, LoadsLazilyAndRestoresIteratorState) {
  const ImageDataset ds =
      image_dataset_from_directory(image_root(), {.batch_size = 3, .image_size = {5, 5}, .seed = 11, .verbose = false});
  EXPECT_EQ(ds.dataset.cardinality(), 5);  // 13 files in batches of 3
  data::Iterator it = ds.dataset.make_iterator(2);
  ASSERT_TRUE(it.next() && it.next());
  const nlohmann::json state = it.save_state();
  std::vector<data::Element> rest;
  while (auto e = it.next()) rest.push_back(*e);
  data::Iterator again = ds.dataset.make_iterator(7);
  again.restore_state(state);
  for (const data::Element& expected : rest) {
    std::optional<data::Element> e = again.next();
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->x().to_vector<float>(), expected.x().to_vector<float>());
    EXPECT_EQ(e->y().to_vector<int>(), expected.y().to_vector<int>());
  }
  EXPECT_FALSE(again.next().has_value());
  // Another epoch (iterator number) draws another order of the same files.
  auto labels_of = [&](uint64_t epoch) {
    std::vector<float> all;
    data::Iterator e = ds.dataset.make_iterator(epoch);
    while (auto b = e.next())
      for (float v : b->x().to_vector<float>()) all.push_back(v);
    return all;
  };
  EXPECT_NE(labels_of(0), labels_of(1));
  EXPECT_EQ(labels_of(3), labels_of(3));
}

TEST(ImageDatasetFromDirectory, WithoutLabelsYieldsImagesOnly) {
  const ImageDataset ds = image_dataset_from_directory(
      image_root(),
      {.label_mode = std::nullopt, .batch_size = 16, .image_size = {4, 4}, .shuffle = false, .verbose = false});
  EXPECT_TRUE(ds.class_names.empty());
  data::Iterator it = ds.dataset.make_iterator();
  const data::Element e = *it.next();
  // As in Keras, label_mode=None means labels=None: every image below the folder, loose and hidden ones too.
  EXPECT_EQ(e.x().shape().str(), Shape({15, 4, 4, 3}).str());
  EXPECT_FALSE(e.y().defined());
}

TEST(ImageDatasetFromDirectory, FollowsLinksOnlyWhenAsked) {
  ScratchTree tree;
  tree.touch("outside/x.png");
  tree.touch("outside/y.jpg");
  tree.touch("c/a.png");
  tree.touch("c/readme.md");
  fs::create_directory_symlink(tree.root / "outside", tree.root / "c" / "linked");
  fs::create_directory_symlink(tree.root / "c", tree.root / "c" / "loop");  // must not hang with follow_links
  EXPECT_EQ(
      image_dataset_from_directory(tree.path(), {.class_names = {"c"}, .shuffle = false, .verbose = false}).file_paths,
      std::vector<std::string>{tree.path() + "/c/a.png"});
  EXPECT_EQ(image_dataset_from_directory(
                tree.path(), {.class_names = {"c"}, .shuffle = false, .follow_links = true, .verbose = false})
                .file_paths,
            (std::vector<std::string>{tree.path() + "/c/a.png", tree.path() + "/c/linked/x.png",
                                      tree.path() + "/c/linked/y.jpg"}));
}

void expect_error_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

TEST(ImageDatasetFromDirectory, ArgumentErrorsAreKeras) {
  const std::string root = image_root();
  auto value_error = [&](const ImageDatasetOptions& o) {
    return error_of<ValueError>([&] { image_dataset_from_directory(root, o); });
  };
  expect_error_contains(error_of<NotFoundError>([] { image_dataset_from_directory("/nonexistent/images"); }),
                        "directory /nonexistent/images does not exist");
  expect_error_contains(
      error_of<NotFoundError>([&] { image_dataset_from_directory(root + "/root.png", {.verbose = false}); }),
      "root.png is not a directory");
  expect_error_contains(value_error({.seed = 1, .validation_split = 0.2, .verbose = false}),
                        "if subset is set, validation_split must be set, and inversely");
  expect_error_contains(value_error({.subset = "training", .verbose = false}), "validation_split must be set");
  expect_error_contains(value_error({.validation_split = 0.2, .subset = "training", .verbose = false}), "give a seed");
  expect_error_contains(value_error({.seed = 1, .validation_split = 1.5, .subset = "training", .verbose = false}),
                        "validation_split must be between 0 and 1, got 1.5");
  expect_error_contains(value_error({.seed = 1, .validation_split = 0.2, .subset = "test", .verbose = false}),
                        "subset must be \"training\", \"validation\" or \"both\"");
  expect_error_contains(value_error({.seed = 1, .validation_split = 0.2, .subset = "both", .verbose = false}),
                        "call image_dataset_from_directory_both");
  expect_error_contains(value_error({.label_mode = "binary", .verbose = false}),
                        "label_mode=\"binary\" needs exactly 2 classes, got ['ants', 'bees', 'wasps']");
  expect_error_contains(value_error({.label_mode = "sparse", .verbose = false}), "label_mode must be");
  expect_error_contains(value_error({.class_names = {"ants", "moths"}, .verbose = false}),
                        "class_names ['ants', 'moths'] do not match the subfolders of");
  expect_error_contains(value_error({.labels = std::nullopt, .class_names = {"ants"}, .verbose = false}),
                        "class_names cannot be given without labels");
  expect_error_contains(value_error({.label_mode = std::nullopt, .class_names = {"ants"}, .verbose = false}),
                        "class_names cannot be given without labels");
  expect_error_contains(value_error({.color_mode = "cmyk", .verbose = false}), "color_mode must be");
  EXPECT_NO_THROW(image_dataset_from_directory(root, {.interpolation = "Nearest", .verbose = false}));  // any case
  expect_error_contains(value_error({.interpolation = "bicubic", .verbose = false}),
                        "interpolation \"bicubic\" is not supported");
  expect_error_contains(value_error({.image_size = {0, 8}, .verbose = false}), "image_size must be");
  // Too few files for a validation file: Keras' slicing leaves the training subset empty.
  expect_error_contains(
      value_error(
          {.class_names = {"wasps"}, .seed = 1, .validation_split = 0.2, .subset = "training", .verbose = false}),
      "no images found in directory");
  expect_error_contains(error_of<ValueError>([&] {
                          image_dataset_from_directory_both(
                              root, {.class_names = {"wasps"}, .seed = 1, .validation_split = 0.2, .verbose = false});
                        }),
                        "no training images found");

  ScratchTree empty;
  empty.touch("cats/notes.txt");
  ::testing::internal::CaptureStdout();
  expect_error_contains(error_of<ValueError>([&] { image_dataset_from_directory(empty.path()); }),
                        "no images found in directory " + empty.path());
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Found 0 files belonging to 1 classes.\n");
}

TEST(ImageDatasetFromDirectory, UnsupportedAndCorruptImagesNameTheFile) {
  ScratchTree tree;
  tree.copy("ants/a0.png", "a/good.png");
  tree.touch("a/anim.gif", {'G', 'I', 'F', '8', '9', 'a'});
  expect_error_contains(
      error_of<InvalidArgumentError>([&] { image_dataset_from_directory(tree.path(), {.verbose = false}); }),
      tree.path() + "/a/anim.gif is a GIF file; lockstep decodes PNG and JPEG only");
  fs::remove(tree.root / "a/anim.gif");

  std::vector<uint8_t> png = data::read_file(image_root() + "/ants/a0.png");
  png.resize(png.size() / 2);
  tree.touch("a/truncated.png", png);
  const ImageDataset ds = image_dataset_from_directory(tree.path(), {.shuffle = false, .verbose = false});
  expect_error_contains(error_of<DataLossError>([&] {
                          for (const data::Element& e : ds.dataset) (void)e;
                        }),
                        tree.path() + "/a/truncated.png: corrupt or truncated PNG");

  // RGBA from a JPEG is TF's error too, raised when the file is read.
  tree.copy("ants/a1.jpg", "b/photo.jpg");
  fs::remove(tree.root / "a/truncated.png");
  const ImageDataset rgba =
      image_dataset_from_directory(tree.path(), {.color_mode = "rgba", .shuffle = false, .verbose = false});
  expect_error_contains(error_of<InvalidArgumentError>([&] {
                          for (const data::Element& e : rgba.dataset) (void)e;
                        }),
                        "photo.jpg: JPEG does not support 4 channels");
}

}  // namespace
}  // namespace lockstep::keras::utils
