// mnist / fashion_mnist load_data(): the search for local files (see datasets.h) and the checks that make
// a damaged file a DataLossError instead of a silently wrong data set.
#include "lockstep/data/datasets.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "lockstep/data/readers.h"

namespace lockstep::datasets {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kSide = 28;
constexpr int kNumClasses = 10;
constexpr const char* kIdxNames[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                      "t10k-labels-idx1-ubyte"};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// One split, checked: images [N, 28, 28], labels [N] in 0..9. The names are the files, for errors.
Split checked_split(Tensor images, Tensor labels, const std::string& images_name, const std::string& labels_name) {
  auto fail = [](const std::string& name, const std::string& reason) {
    throw DataLossError(make_message(name, ": ", reason, "; the file is corrupt or not this data set: delete it and download it again"));
  };
  if (images.rank() != 3 || images.dim(1) != kSide || images.dim(2) != kSide)
    fail(images_name, make_message("holds images of shape ", images.shape().str(), ", expected (N, 28, 28)"));
  if (labels.rank() != 1) fail(labels_name, make_message("holds labels of shape ", labels.shape().str(), ", expected (N,)"));
  if (labels.dim(0) != images.dim(0))
    fail(labels_name, make_message("holds ", labels.dim(0), " labels but ", images_name, " holds ", images.dim(0), " images"));
  const uint8_t* y = labels.data<uint8_t>();
  for (int64_t i = 0; i < labels.dim(0); ++i) {
    if (y[i] >= kNumClasses) fail(labels_name, make_message("label ", int(y[i]), " at index ", i, " is outside 0..9"));
  }
  return {std::move(images), std::move(labels)};
}

// name.gz or name in dir, whichever exists; empty when neither does.
std::string find_idx(const fs::path& dir, const std::string& name) {
  for (const std::string& candidate : {name + ".gz", name}) {
    if (is_file(dir / candidate)) return (dir / candidate).string();
  }
  return {};
}

std::pair<Split, Split> load_npz(const std::string& path) {
  std::map<std::string, Tensor> arrays = data::read_npz(path);
  auto get = [&](const std::string& key) {
    auto it = arrays.find(key);
    if (it == arrays.end())
      throw DataLossError(make_message(path, ": has no ", key, ".npy member (Keras' mnist.npz holds x_train, y_train, "
                                       "x_test, y_test); the file is corrupt or not mnist.npz: download it again"));
    return it->second;
  };
  return {checked_split(get("x_train"), get("y_train"), path + ":x_train", path + ":y_train"),
          checked_split(get("x_test"), get("y_test"), path + ":x_test", path + ":y_test")};
}

// The data set in `dir`, or nullopt after noting in `tried` why it is not there.
std::optional<std::pair<Split, Split>> try_directory(const fs::path& dir, bool allow_npz, std::vector<std::string>& tried) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    tried.push_back(dir.string() + " (no such directory)");
    return std::nullopt;
  }
  std::string paths[4];
  const char* missing = nullptr;
  for (int i = 0; i < 4; ++i) {
    paths[i] = find_idx(dir, kIdxNames[i]);
    if (paths[i].empty() && !missing) missing = kIdxNames[i];
  }
  if (!missing) {
    return std::pair{checked_split(data::read_idx(paths[0], 3), data::read_idx(paths[1], 1), paths[0], paths[1]),
                     checked_split(data::read_idx(paths[2], 3), data::read_idx(paths[3], 1), paths[2], paths[3])};
  }
  if (allow_npz && is_file(dir / "mnist.npz")) return load_npz((dir / "mnist.npz").string());
  tried.push_back(make_message(dir.string(), " (no ", missing, "[.gz]", allow_npz ? " nor mnist.npz" : "", ")"));
  return std::nullopt;
}

// Searches $LOCKSTEP_DATASETS/<subdir>, $LOCKSTEP_DATASETS, the Keras cache, then /usr/share/datasets.
std::pair<Split, Split> load_named(const char* title, const char* subdir, const fs::path& keras_dir, bool allow_npz,
                                   const char* fix) {
  std::vector<fs::path> candidates;
  std::vector<std::string> tried;
  if (const char* env = std::getenv("LOCKSTEP_DATASETS"); env && *env) {
    candidates.push_back(fs::path(env) / subdir);
    candidates.push_back(fs::path(env));
  } else {
    tried.push_back("$LOCKSTEP_DATASETS (unset)");
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    fs::path keras = fs::path(home) / ".keras" / "datasets";
    candidates.push_back(keras_dir.empty() ? keras : keras / keras_dir);
  } else {
    tried.push_back("~/.keras/datasets ($HOME unset)");
  }
  candidates.push_back(fs::path("/usr/share/datasets") / subdir);
  for (const fs::path& dir : candidates) {
    if (auto splits = try_directory(dir, allow_npz, tried)) return std::move(*splits);
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw NotFoundError(make_message(title, " not found; tried ", list, ". ", fix));
}

}  // namespace

namespace fashion_mnist {
std::pair<Split, Split> load_data() {
  return load_named("Fashion-MNIST", "fashion-mnist", "fashion-mnist", false,
                    "Install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or set "
                    "LOCKSTEP_DATASETS to a directory holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                    "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz");
}
}  // namespace fashion_mnist

namespace mnist {
std::pair<Split, Split> load_data() {
  return load_named("MNIST", "mnist", "", true,
                    "Put Keras' mnist.npz in ~/.keras/datasets/, or set LOCKSTEP_DATASETS to a directory holding "
                    "mnist.npz or the four MNIST IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                    "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz)");
}
}  // namespace mnist

std::pair<Split, Split> load_idx_directory(const std::string& dir) {
  std::vector<std::string> tried;
  if (auto splits = try_directory(dir, true, tried)) return std::move(*splits);
  throw NotFoundError(make_message("no data set in ", tried[0],
                                   "; pass a directory holding train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                                   "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each raw or .gz), or mnist.npz"));
}

}  // namespace lockstep::datasets
