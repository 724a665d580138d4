// The little of HDF5 that Keras 3's model.weights.h5 needs: groups, a string attribute and float/int64
// datasets, in a file image held in memory (it travels inside a zip archive). HDF5's C API stays in h5.cc.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::detail {

// Builds an HDF5 file in memory. Paths are "/"-separated; parents are created as needed.
class H5Writer {
 public:
  H5Writer();
  ~H5Writer();
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;
  // A group with a string attribute "name" (what Keras writes on each "vars" group).
  void group(const std::string& path, const std::string& name_attribute);
  // A dataset of t's shape and dtype (float32 or int64; other dtypes are written as float32).
  void dataset(const std::string& path, const Tensor& t);
  // The finished file's bytes.
  std::string image();

 private:
  int64_t file_ = -1;
  int64_t open_group(const std::string& path);
};

// Reads an HDF5 file image. `where` names the file in errors ("x.keras: model.weights.h5").
class H5Reader {
 public:
  H5Reader(const std::string& image, std::string where);
  ~H5Reader();
  H5Reader(const H5Reader&) = delete;
  H5Reader& operator=(const H5Reader&) = delete;
  bool has(const std::string& path) const;
  // The names of a group's members, sorted as numbers when they are numbers ("0", "1", ..., "10").
  std::vector<std::string> members(const std::string& path) const;
  // A dataset as a float32 tensor (any float type) or int64 tensor (any integer type).
  Tensor dataset(const std::string& path) const;

 private:
  int64_t file_ = -1;
  std::string where_;
  size_t image_size_;  // no dataset can hold more bytes than the file
};

}  // namespace lockstep::keras::detail
