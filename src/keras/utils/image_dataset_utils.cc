// image_dataset_from_directory as Keras 3 does it (keras/src/utils/image_dataset_utils.py, dataset_utils.py):
// index the files (os.walk order), shuffle the list with numpy's RandomState, split off the validation files,
// then range(files).shuffle(8 batches, seed) in tf.data's order -> map(read, decode, resize) -> batch -> prefetch.
#include "lockstep/keras/utils/image_dataset_utils.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <set>

#include "lockstep/core/philox.h"
#include "lockstep/data/dataset_node.h"
#include "lockstep/data/images.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::keras::utils {

namespace {

namespace fs = std::filesystem;

// The extensions Keras indexes (ALLOWLIST_FORMATS); lockstep decodes the first three.
const std::vector<std::string> kKerasFormats = {".jpeg", ".jpg", ".png", ".bmp", ".gif"};
const std::vector<std::string> kSupportedInterpolations = {"bilinear", "nearest"};

std::string python_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

// os.path.join for two parts.
std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The folders below `top` with their files, as os.walk(top, followlinks) lists them: a symbolic link to a folder
// counts as a folder and is entered only with follow_links; unreadable folders are skipped. Folders reached twice
// through links are entered once (os.walk would loop).
void walk(const std::string& top, bool follow_links, std::set<fs::path>& seen,
          std::vector<std::pair<std::string, std::vector<std::string>>>& out) {
  std::error_code ec;
  const fs::path real = fs::canonical(top, ec);
  if (ec || !seen.insert(real).second) return;
  fs::directory_iterator it(top, ec);
  if (ec) return;
  std::vector<std::string> files, dirs;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    std::error_code dir_ec;
    if (entry.is_directory(dir_ec))
      dirs.push_back(name);
    else
      files.push_back(name);
  }
  out.emplace_back(top, std::move(files));
  for (const std::string& name : dirs) {
    const std::string path = join(top, name);
    std::error_code link_ec;
    if (follow_links || !fs::is_symlink(path, link_ec)) walk(path, follow_links, seen, out);
  }
}

// numpy.random.RandomState(seed).shuffle: legacy seeding is MT19937's init_genrand (std::mt19937's), and each
// swap partner comes from random_interval, which masks 32-bit draws and rejects those above the bound.
std::vector<size_t> numpy_shuffle_permutation(size_t n, uint32_t seed) {
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  std::mt19937 mt(seed);
  for (size_t i = n > 0 ? n - 1 : 0; i > 0; --i) {
    uint64_t mask = i;
    for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
    uint64_t j;
    do j = mt() & mask;
    while (j > i);
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

// range(n).shuffle(buffer_size, seed) in the order TF 2.21 yields it, iterator after iterator, so that epoch e of
// a fit (make_iterator(e)) sees the files in the order Keras' epoch e does. TF's ShuffleDatasetV3 without a global
// seed: a seed generator Philox(87654321 (TF's DEFAULT_GRAPH_SEED), seed) hands iterator k the seeds (draws 2k,
// 2k + 1); that iterator's Philox(seeds) picks offset (draw % filled) in the oldest filled slice of a circular
// buffer of buffer_size, yields that slot and moves the slice's first element into it, then refills one slot.
// lockstep's Philox4x32-10 is TF's PhiloxRandom with (key, counter high half) = (seed, stream).
class TFShuffledRangeNode final : public data::DatasetNode {
 public:
  TFShuffledRangeNode(int64_t n, int64_t buffer_size, uint32_t seed)
      : DatasetNode("tf_shuffled_range", {{"n", n}, {"buffer_size", buffer_size}, {"seed", seed}}, {}),
        n_(n),
        buffer_size_(buffer_size),
        seed_(seed) {}
  int64_t cardinality() const override { return n_; }
  data::NodePtr with_inputs(std::vector<data::NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, str(), " takes no input dataset, got ", inputs.size());
    return std::make_shared<TFShuffledRangeNode>(n_, buffer_size_, seed_);
  }
  std::unique_ptr<data::ItemIterator> make_iterator(uint64_t salt) const override;

  // The order for iterator number k (the salt; repeat() epochs get mixed salts, hence other orders).
  std::vector<int64_t> order(uint64_t k) const {
    constexpr uint64_t kTFDefaultGraphSeed = 87654321;
    Philox seeds(kTFDefaultGraphSeed, seed_);
    seeds.skip(2 * k);
    const uint32_t seed1 = seeds.next_u32(), seed2 = seeds.next_u32();
    Philox rng(seed1, seed2);
    const auto size = static_cast<size_t>(std::max<int64_t>(1, std::min(buffer_size_, n_)));
    std::vector<int64_t> buffer(size), out;
    out.reserve(static_cast<size_t>(n_));
    uint64_t start = 0, end = 0;
    int64_t next = 0;
    for (;;) {
      for (; end - start < size && next < n_; ++end) buffer[end % size] = next++;
      if (end == start) return out;
      const size_t slot = (start + rng.next_u32() % (end - start)) % size;
      out.push_back(buffer[slot]);
      buffer[slot] = buffer[start % size];
      ++start;
    }
  }

 private:
  int64_t n_, buffer_size_;
  uint32_t seed_;
};

// Yields the order's indices as int64 scalars; the state is (salt, position), the order being recomputed.
class TFShuffledRangeIterator final : public data::ItemIterator {
 public:
  TFShuffledRangeIterator(const TFShuffledRangeNode& node, uint64_t salt)
      : node_(node), salt_(salt), order_(node.order(salt)) {}
  std::optional<data::Item> next() override {
    if (position_ >= order_.size()) return std::nullopt;
    return data::Item{-1, {lockstep::scalar(static_cast<double>(order_[position_++]), DType::int64), {}, {}}};
  }
  nlohmann::json save_state() const override { return {{"salt", salt_}, {"position", position_}}; }
  void restore_state(const nlohmann::json& state) override {
    const auto salt = state.at("salt").get<uint64_t>();
    if (salt != salt_) order_ = node_.order(salt_ = salt);
    position_ = state.at("position").get<size_t>();
    LS_CHECK(position_ <= order_.size(), ValueError, "restore_state: ", node_.str(), " was saved at element ",
             position_, " of more than its ", order_.size(), "; the pipeline differs from the saved one");
  }

 private:
  const TFShuffledRangeNode& node_;
  uint64_t salt_;
  std::vector<int64_t> order_;
  size_t position_ = 0;
};

std::unique_ptr<data::ItemIterator> TFShuffledRangeNode::make_iterator(uint64_t salt) const {
  return std::make_unique<TFShuffledRangeIterator>(*this, salt);
}

struct Index {
  std::vector<std::string> file_paths;
  std::vector<int32_t> labels;  // empty without labels
  std::vector<std::string> class_names;
};

// dataset_utils.index_directory.
Index index_directory(const std::string& directory, bool inferred, std::vector<std::string> class_names,
                      bool follow_links, bool verbose) {
  std::error_code ec;
  LS_CHECK(fs::exists(directory, ec), NotFoundError, "image_dataset_from_directory: directory ", directory,
           " does not exist; check the path");
  LS_CHECK(fs::is_directory(directory, ec), NotFoundError, "image_dataset_from_directory: ", directory,
           " is not a directory; pass the folder that holds the class subfolders");
  std::vector<std::string> subdirs;
  if (inferred) {
    for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
      const std::string name = entry.path().filename().string();
      std::error_code dir_ec;
      if (entry.is_directory(dir_ec) && name[0] != '.') subdirs.push_back(name);
    }
    std::sort(subdirs.begin(), subdirs.end());
    if (!class_names.empty()) {
      for (const std::string& name : class_names)
        LS_CHECK(std::binary_search(subdirs.begin(), subdirs.end(), name), ValueError,
                 "image_dataset_from_directory: class_names ", python_list(class_names),
                 " do not match the subfolders of ", directory, ": expected ", python_list(subdirs),
                 " (or a subset of it)");
      subdirs = class_names;  // the given order
    }
  } else {
    subdirs = {""};
  }

  Index index;
  for (size_t label = 0; label < subdirs.size(); ++label) {
    const std::string& subdir = subdirs[label];
    const std::string top = join(directory, subdir);
    std::set<fs::path> seen;
    std::vector<std::pair<std::string, std::vector<std::string>>> folders;
    walk(top, follow_links, seen, folders);
    std::sort(folders.begin(), folders.end());  // Keras sorts os.walk's folders by path, then their files
    for (auto& [root, files] : folders) {
      std::sort(files.begin(), files.end());
      const std::string within = root.size() > top.size() ? root.substr(top.size() + (top.back() == '/' ? 0 : 1)) : "";
      for (const std::string& name : files) {
        const std::string ext = lower(name);
        if (std::none_of(kKerasFormats.begin(), kKerasFormats.end(), [&](auto& f) { return ends_with(ext, f); }))
          continue;
        index.file_paths.push_back(join(directory, join(subdir, join(within, name))));
        if (inferred) index.labels.push_back(static_cast<int32_t>(label));
      }
    }
  }
  if (inferred) index.class_names = subdirs;
  if (verbose) {
    if (inferred)
      std::cout << "Found " << index.file_paths.size() << " files belonging to " << subdirs.size() << " classes."
                << std::endl;
    else
      std::cout << "Found " << index.file_paths.size() << " files." << std::endl;
  }
  for (const std::string& path : index.file_paths) {
    const std::string ext = lower(path);
    LS_CHECK(!ends_with(ext, ".gif") && !ends_with(ext, ".bmp"), InvalidArgumentError,
             "image_dataset_from_directory: ", path, " is a ", ends_with(ext, ".gif") ? "GIF" : "BMP",
             " file; lockstep decodes PNG and JPEG only: convert it or move it out of ", directory);
  }
  return index;
}

// dataset_utils.get_training_or_validation_split, Python slicing included: with no validation file
// ([:-0] is empty) the training subset is empty.
Index split(const Index& all, double validation_split, const std::string& subset, bool verbose) {
  const size_t n = all.file_paths.size();
  const auto num_val = static_cast<size_t>(validation_split * static_cast<double>(n));
  const bool training = subset == "training";
  if (verbose) {
    if (training)
      std::cout << "Using " << n - num_val << " files for training." << std::endl;
    else
      std::cout << "Using " << num_val << " files for validation." << std::endl;
  }
  const size_t begin = training ? 0 : (num_val == 0 ? 0 : n - num_val);
  const size_t end = training ? (num_val == 0 ? 0 : n - num_val) : n;
  Index out{{all.file_paths.begin() + begin, all.file_paths.begin() + end}, {}, all.class_names};
  if (!all.labels.empty()) out.labels.assign(all.labels.begin() + begin, all.labels.begin() + end);
  return out;
}

// What the map function needs; shared by every element of one dataset and never changed, so the function is pure.
struct Loader {
  std::vector<std::string> paths;
  std::vector<int32_t> labels;
  std::optional<std::string> label_mode;
  int64_t num_classes = 0;
  int channels = 3;
  std::array<int64_t, 2> size{};
  std::string interpolation;
  bool crop_to_aspect_ratio = false;

  // keras.src.utils.image_utils.smart_resize's crop, in the float32 arithmetic of its TF code path.
  Tensor crop(const Tensor& image) const {
    const int64_t h = image.dim(0), w = image.dim(1);
    auto to_int = [](float v) { return static_cast<int64_t>(v); };
    int64_t crop_h = to_int(static_cast<float>(w * size[0]) / static_cast<float>(size[1]));
    int64_t crop_w = to_int(static_cast<float>(h * size[1]) / static_cast<float>(size[0]));
    crop_h = std::max<int64_t>(std::min(h, crop_h), 1);
    crop_w = std::max<int64_t>(std::min(w, crop_w), 1);
    const int64_t top = to_int(static_cast<float>(h - crop_h) / 2), left = to_int(static_cast<float>(w - crop_w) / 2);
    return raw_ops::slice(image, {top, left, 0}, {crop_h, crop_w, -1});
  }

  data::Element operator()(const data::Element& index_element) const {
    const auto i = static_cast<size_t>(index_element.x().item<int64_t>());
    Tensor image = data::read_image(paths[i], channels);
    if (crop_to_aspect_ratio) image = crop(image);
    Tensor x = data::resize_image(image, size, interpolation);
    if (!label_mode) return x;
    const int32_t label = labels[i];
    Tensor y;
    if (*label_mode == "int") {
      y = lockstep::scalar(label, DType::int32);
    } else if (*label_mode == "binary") {
      y = lockstep::full(Shape({1}), label, DType::float32);
    } else {
      y = lockstep::full(Shape({num_classes}), 0, DType::float32);
      y.data<float>()[label] = 1;
    }
    return data::Element{x, y};
  }
};

// Everything both entry points share: argument checks, indexing, the global shuffle. Returns the settings that
// make_dataset needs.
struct Prepared {
  Index index;
  std::optional<std::string> label_mode;
  int channels = 3;
  std::string interpolation;
  uint32_t seed = 0;
};

data::Dataset make_dataset(const Index& index, const ImageDatasetOptions& o, const Prepared& p, bool shuffle) {
  auto loader = std::make_shared<Loader>(Loader{index.file_paths, index.labels, p.label_mode,
                                                static_cast<int64_t>(index.class_names.size()), p.channels,
                                                o.image_size, p.interpolation, o.crop_to_aspect_ratio});
  const auto n = static_cast<int64_t>(index.file_paths.size());
  data::Dataset ds =
      shuffle ? data::Dataset(std::make_shared<TFShuffledRangeNode>(n, o.batch_size ? *o.batch_size * 8 : 1024, p.seed))
              : data::Dataset::range(0, n);
  ds = ds.map([loader](const data::Element& e) { return (*loader)(e); });
  if (o.batch_size) ds = ds.batch(*o.batch_size);
  return ds.prefetch(data::kAutotune);
}

Prepared prepare(const std::string& directory, const ImageDatasetOptions& o) {
  const char* fn = "image_dataset_from_directory: ";
  LS_CHECK(!o.labels || *o.labels == "inferred", ValueError, fn,
           "labels must be \"inferred\" or std::nullopt (no labels), got \"", *o.labels,
           "\"; lockstep does not take a list of labels");
  LS_CHECK(!o.label_mode || *o.label_mode == "int" || *o.label_mode == "categorical" || *o.label_mode == "binary",
           ValueError, fn, "label_mode must be \"int\", \"categorical\", \"binary\" or std::nullopt, got \"",
           o.label_mode.value_or(""), "\"");
  Prepared p;
  const bool inferred = o.labels && o.label_mode;  // Keras: either None means no labels
  if (inferred) p.label_mode = o.label_mode;
  if (o.color_mode == "rgb")
    p.channels = 3;
  else if (o.color_mode == "rgba")
    p.channels = 4;
  else if (o.color_mode == "grayscale")
    p.channels = 1;
  else
    throw ValueError(
        make_message(fn, "color_mode must be \"rgb\", \"rgba\" or \"grayscale\", got \"", o.color_mode, "\""));
  LS_CHECK(o.image_size[0] > 0 && o.image_size[1] > 0, ValueError, fn,
           "image_size must be two positive integers, got {", o.image_size[0], ", ", o.image_size[1], "}");
  LS_CHECK(!o.batch_size || *o.batch_size > 0, ValueError, fn, "batch_size must be positive or std::nullopt, got ",
           o.batch_size.value_or(0));
  p.interpolation = lower(o.interpolation);  // Keras accepts any case
  LS_CHECK(std::count(kSupportedInterpolations.begin(), kSupportedInterpolations.end(), p.interpolation) == 1,
           ValueError, fn, "interpolation \"", o.interpolation, "\" is not supported; use \"bilinear\" or \"nearest\"");
  // dataset_utils.check_validation_split_arg.
  const bool splitting = o.validation_split != 0;
  LS_CHECK(!splitting || (o.validation_split > 0 && o.validation_split < 1), ValueError, fn,
           "validation_split must be between 0 and 1, got ", o.validation_split);
  LS_CHECK(splitting == o.subset.has_value(), ValueError, fn,
           "if subset is set, validation_split must be set, and inversely (got validation_split=", o.validation_split,
           ", subset=", o.subset ? "\"" + *o.subset + "\"" : std::string("none"), ")");
  LS_CHECK(!o.subset || *o.subset == "training" || *o.subset == "validation" || *o.subset == "both", ValueError, fn,
           "subset must be \"training\", \"validation\" or \"both\", got \"", o.subset.value_or(""), "\"");
  LS_CHECK(!splitting || !o.shuffle || o.seed.has_value(), ValueError, fn,
           "when using validation_split and shuffling, give a seed, so that the training and validation subsets do "
           "not overlap");
  LS_CHECK(inferred || o.class_names.empty(), ValueError, fn,
           "class_names cannot be given without labels (labels or label_mode std::nullopt)");

  p.seed = o.seed.value_or(static_cast<uint32_t>(data::kDefaultShuffleSeed));
  p.index = index_directory(directory, inferred, inferred ? o.class_names : std::vector<std::string>{}, o.follow_links,
                            o.verbose);
  LS_CHECK(p.label_mode != "binary" || p.index.class_names.size() == 2, ValueError, fn,
           "label_mode=\"binary\" needs exactly 2 classes, got ", python_list(p.index.class_names));
  if (o.shuffle) {  // Keras shuffles paths and labels with two generators of the same seed: one permutation
    const std::vector<size_t> perm = numpy_shuffle_permutation(p.index.file_paths.size(), p.seed);
    Index shuffled{{}, {}, p.index.class_names};
    for (size_t k : perm) {
      shuffled.file_paths.push_back(p.index.file_paths[k]);
      if (!p.index.labels.empty()) shuffled.labels.push_back(p.index.labels[k]);
    }
    p.index = std::move(shuffled);
  }
  return p;
}

[[noreturn]] void no_images(const std::string& which, const std::string& directory) {
  throw ValueError(make_message("image_dataset_from_directory: no ", which, "images found in directory ", directory,
                                " (Keras looks for .jpeg, .jpg, .png, .bmp and .gif files, in class subfolders when "
                                "labels are inferred; with validation_split, check that both subsets get files)"));
}

}  // namespace

ImageDataset image_dataset_from_directory(const std::string& directory, const ImageDatasetOptions& options) {
  LS_CHECK(options.subset != "both", ValueError,
           "image_dataset_from_directory: subset=\"both\" makes two datasets: call image_dataset_from_directory_both");
  Prepared p = prepare(directory, options);
  Index index =
      options.subset ? split(p.index, options.validation_split, *options.subset, options.verbose) : std::move(p.index);
  if (index.file_paths.empty()) no_images("", directory);
  data::Dataset ds = make_dataset(index, options, p, options.shuffle);
  return {std::move(ds), std::move(index.class_names), std::move(index.file_paths)};
}

std::pair<ImageDataset, ImageDataset> image_dataset_from_directory_both(const std::string& directory,
                                                                        const ImageDatasetOptions& options) {
  ImageDatasetOptions o = options;
  LS_CHECK(!o.subset || *o.subset == "both", ValueError,
           "image_dataset_from_directory_both: subset must be \"both\" "
           "or unset, got \"",
           *o.subset, "\"; call image_dataset_from_directory for one subset");
  o.subset = "both";
  Prepared p = prepare(directory, o);
  Index training = split(p.index, o.validation_split, "training", o.verbose);
  Index validation = split(p.index, o.validation_split, "validation", o.verbose);
  if (training.file_paths.empty()) no_images("training ", directory);
  if (validation.file_paths.empty()) no_images("validation ", directory);
  data::Dataset train_ds = make_dataset(training, o, p, o.shuffle);
  data::Dataset val_ds = make_dataset(validation, o, p, false);
  return {{std::move(train_ds), std::move(training.class_names), std::move(training.file_paths)},
          {std::move(val_ds), std::move(validation.class_names), std::move(validation.file_paths)}};
}

}  // namespace lockstep::keras::utils
