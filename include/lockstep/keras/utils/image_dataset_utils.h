// keras.utils.image_dataset_from_directory: a folder of class subfolders of PNG/JPEG images as a lazy Dataset of
// (image, label) batches, with Keras 3's file order, labels, validation split and printed lines.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::keras::utils {

// Keras' keyword arguments, in Keras' order; std::nullopt stands for Python's None.
struct ImageDatasetOptions {
  // "inferred": one class per subfolder; std::nullopt: images only, from every folder below `directory`.
  std::optional<std::string> labels = "inferred";
  // "int" (int32 scalar), "categorical" (float32 one-hot [num_classes]), "binary" (float32 [1], 2 classes) or
  // std::nullopt (no labels).
  std::optional<std::string> label_mode = "int";
  // Subfolders to use, in this order (their labels are their positions); empty: every subfolder, sorted.
  std::vector<std::string> class_names = {};
  std::string color_mode = "rgb";                  // "rgb" (3 channels), "grayscale" (1), "rgba" (4; PNG files only)
  std::optional<int64_t> batch_size = 32;          // std::nullopt: single images
  std::array<int64_t, 2> image_size = {256, 256};  // {height, width}
  bool shuffle = true;
  // Shuffles the file list as numpy.random.RandomState(seed) does (this decides the validation split), then each
  // epoch as tf.data's shuffle(8 batches, seed) does: make_iterator(e) yields Keras' epoch e order (without
  // tf.random.set_seed). Keras draws a seed when none is given; lockstep uses a fixed one, so runs repeat.
  std::optional<uint32_t> seed = {};
  double validation_split = 0;             // 0: no split
  std::optional<std::string> subset = {};  // "training" | "validation" ("both": image_dataset_from_directory_both)
  std::string interpolation = "bilinear";  // or "nearest" (images then stay uint8, as in Keras)
  bool follow_links = false;               // descend into symbolic links to folders
  bool crop_to_aspect_ratio = false;       // crop the largest centred window of image_size's aspect ratio first
  // Print Keras' lines on stdout: "Found N files belonging to C classes." and "Using M files for training."
  bool verbose = true;
};

struct ImageDataset {
  // Elements: x = float32 [batch, height, width, channels] (uint8 with "nearest"), y = labels as above (undefined
  // without labels). Files are read and decoded lazily as the iterator advances; iterator state saves and restores.
  data::Dataset dataset;
  std::vector<std::string> class_names;  // TF's dataset.class_names; empty without labels (Keras: None)
  std::vector<std::string> file_paths;   // TF's dataset.file_paths: the files in Keras' order before the epoch shuffle
};

// Throws NotFoundError for a missing directory and ValueError for Keras' argument errors (no images found,
// validation_split without subset or, when shuffling, without seed, binary labels without exactly 2 classes...).
// An unsupported image (GIF, BMP) is an error naming the file at once; a corrupt one when the iterator reaches it.
ImageDataset image_dataset_from_directory(const std::string& directory, const ImageDatasetOptions& options = {});
// subset="both" (Keras returns two datasets): {training, validation}; the validation set is never shuffled.
//   auto [train, val] = image_dataset_from_directory_both(dir, {.seed = 1, .validation_split = 0.2});
std::pair<ImageDataset, ImageDataset> image_dataset_from_directory_both(const std::string& directory,
                                                                        const ImageDatasetOptions& options);

}  // namespace lockstep::keras::utils
