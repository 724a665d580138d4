// `lockstep train --data SPEC`: a user's own data for their own model, read the way their TensorFlow program
// reads it: TFRecord files of tf.train.Example (TFRecordDataset + parse_single_example), a folder of class
// subfolders of images (image_dataset_from_directory) or CSV files (make_csv_dataset).
#include <algorithm>

#include "cli.h"
#include "flags.h"
#include "lockstep/core/error.h"
#include "lockstep/data/csv.h"
#include "lockstep/data/example.h"
#include "lockstep/data/tfrecord.h"
#include "lockstep/keras/utils.h"

namespace lockstep::cli {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = text.find(sep, start)) != std::string::npos; start = end + 1) out.push_back(text.substr(start, end - start));
  out.push_back(text.substr(start));
  return out;
}

// tfrecord:PATTERN[,PATTERN...]: every file matching a pattern, each pattern's matches sorted.
data::Dataset tfrecord_dataset(const std::string& patterns, const UserDataOptions& o, const Shape& feature_shape,
                               DType feature_dtype) {
  LS_CHECK(!o.feature_key.empty(), ValueError, "--data tfrecord: needs --feature-key: the name of the tf.train.Example "
           "feature the model takes (and --label-key for the label, \"label\" by default)");
  std::vector<std::string> files;
  for (const std::string& pattern : split(patterns, ','))
    for (std::string& f : data::list_files(pattern)) files.push_back(std::move(f));
  const bool gzip = o.compression == "GZIP";
  data::FeatureSpec spec = {
      {o.feature_key, data::FixedLenFeature{feature_shape.dims(), feature_dtype}},
      {o.label_key, data::FixedLenFeature{{}, o.label_dtype == "float32" ? DType::float32 : DType::int64}}};
  return data::TFRecordDataset(files, {.compression_type = gzip ? "GZIP" : ""})
      .map(data::parse_example_fn(spec, o.feature_key, o.label_key));
}

// csv:PATTERN: the label column becomes y, every other column a feature in x (make_csv_dataset's rows, one pass).
data::Dataset csv_dataset(const std::string& pattern, const UserDataOptions& o, int64_t global_batch, bool shuffle) {
  return data::experimental::make_csv_dataset(
      pattern, global_batch, {.label_name = o.label_column, .num_epochs = 1, .shuffle = shuffle, .shuffle_seed = o.seed});
}

// Data without a single record would train on nothing (fit refuses it only after a first pass): refused before
// any step, naming the flag. Reads one record or row of `unshuffled`.
void check_not_empty(const data::Dataset& unshuffled, const char* flag, const std::string& spec, const char* unit) {
  LS_CHECK(unshuffled.make_iterator().next().has_value(), ValueError, flag, " ", spec, " holds no ", unit,
           "; give files with data");
}

}  // namespace

UserData load_user_data(const UserDataOptions& o, const Shape& feature_shape, DType feature_dtype, int64_t global_batch,
                        bool repeat) {
  auto kind_of = [](const std::string& spec) {
    const size_t colon = spec.find(':');
    const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
    LS_CHECK(kind == "tfrecord" || kind == "images" || kind == "csv", ValueError, "--data ", quote(spec),
             " is not tfrecord:PATTERN[,PATTERN...], images:DIR or csv:PATTERN");
    LS_CHECK(colon + 1 < spec.size(), ValueError, "--data ", spec, " names no files: give ", kind,
             kind == "images" ? ":DIR" : ":PATTERN");
    return std::pair{kind, spec.substr(colon + 1)};
  };
  const auto [kind, where] = kind_of(o.spec);
  LS_CHECK(o.validation_split == 0 || kind == "images", ValueError, "--validation-split splits an image folder "
           "(--data images:DIR); for ", kind, " data give --validation-data ", kind, ":...");
  // images: resized to the model's input size, with its channels; batched by image_dataset_from_directory.
  auto image_options = [&](bool shuffle) {
    const auto& d = feature_shape.dims();
    LS_CHECK(d.size() == 3 && (d[2] == 1 || d[2] == 3 || d[2] == 4), ValueError, "--data images: needs a model that "
             "takes images (height, width, channels of 1, 3 or 4), but it takes ", feature_shape.str());
    return keras::utils::ImageDatasetOptions{.color_mode = d[2] == 1 ? "grayscale" : d[2] == 4 ? "rgba" : "rgb",
                                             .batch_size = global_batch,
                                             .image_size = {d[0], d[1]},
                                             .shuffle = shuffle,
                                             .seed = static_cast<uint32_t>(o.seed),
                                             .verbose = o.verbose};
  };
  // One dataset of `kind` from `at` (`flag`'s), batched by the global batch; the training data is shuffled. An image
  // folder without images is refused by image_dataset_from_directory itself.
  auto read = [&](const char* flag, const std::string& spec, const std::string& at, bool shuffle) {
    if (kind == "images") return keras::utils::image_dataset_from_directory(at, image_options(shuffle)).dataset;
    if (kind == "csv") {
      check_not_empty(csv_dataset(at, o, 1, false), flag, spec, "rows after the header");
      return csv_dataset(at, o, global_batch, shuffle);
    }
    data::Dataset records = tfrecord_dataset(at, o, feature_shape, feature_dtype);
    check_not_empty(records, flag, spec, "records");
    return (shuffle ? records.shuffle(o.shuffle_buffer, o.seed) : records).batch(global_batch);
  };

  std::optional<data::Dataset> train, validation;
  if (o.validation_split > 0) {
    keras::utils::ImageDatasetOptions split = image_options(true);
    split.validation_split = o.validation_split;
    auto [t, v] = keras::utils::image_dataset_from_directory_both(where, split);
    train = t.dataset;
    validation = v.dataset;
  } else {
    train = read("--data", o.spec, where, true);
  }
  if (repeat) train = train->repeat();
  if (!o.validation_spec.empty()) {
    const auto [vkind, vwhere] = kind_of(o.validation_spec);
    LS_CHECK(vkind == kind, ValueError, "--validation-data ", o.validation_spec, " is ", vkind, " data but --data is ",
             kind, ": give both in the same form");
    validation = read("--validation-data", o.validation_spec, vwhere, false);
  }
  return {*train, validation};
}

}  // namespace lockstep::cli
