// HDF5 file images for Keras 3's model.weights.h5: the core driver keeps the file in memory, so it is written
// into and read out of the .keras zip without a temporary file.
#include <hdf5.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "h5-impl.h"
#include "lockstep/core/error.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::keras::detail {

namespace {
// HDF5 prints its error stack on every failed call; lockstep raises its own errors instead.
void silence_hdf5() {
  static const bool once = [] { return H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0; }();
  (void)once;
}

// Closes an HDF5 handle when it goes out of scope.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

hid_t core_access(size_t increment) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  LS_CHECK(fapl >= 0 && H5Pset_fapl_core(fapl, increment, 0) >= 0, Error, "HDF5: cannot set up an in-memory file");
  return fapl;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

// ---- writing ----

H5Writer::H5Writer() {
  silence_hdf5();
  Handle fapl{core_access(1 << 20), H5Pclose};
  file_ = H5Fcreate("model.weights.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id);
  LS_CHECK(file_ >= 0, Error, "HDF5: cannot create an in-memory file");
}

H5Writer::~H5Writer() {
  if (file_ >= 0) H5Fclose(file_);
}

int64_t H5Writer::open_group(const std::string& path) {
  hid_t g = H5Gopen2(file_, "/", H5P_DEFAULT);
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    hid_t next = H5Lexists(g, part.c_str(), H5P_DEFAULT) > 0
                     ? H5Gopen2(g, part.c_str(), H5P_DEFAULT)
                     : H5Gcreate2(g, part.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    LS_CHECK(next >= 0, Error, "HDF5: cannot create group ", path);
    g = next;
    start = end + 1;
  }
  return g;
}

void H5Writer::group(const std::string& path, const std::string& name_attribute) {
  Handle g{open_group(path), H5Gclose};
  // A variable-length UTF-8 string, as h5py writes a Python str.
  Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, H5T_VARIABLE);
  H5Tset_cset(type.id, H5T_CSET_UTF8);
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  Handle attr{H5Acreate2(g.id, "name", type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  const char* value = name_attribute.c_str();
  LS_CHECK(attr.id >= 0 && H5Awrite(attr.id, type.id, &value) >= 0, Error, "HDF5: cannot write attribute name of ",
           path);
}

void H5Writer::dataset(const std::string& path, const Tensor& t) {
  const size_t slash = path.rfind('/');
  Handle g{open_group(path.substr(0, slash)), H5Gclose};
  const bool integer = t.dtype() == DType::int64;
  const Tensor values = (integer ? t : raw_ops::cast(t, DType::float32)).cpu().contiguous();
  std::vector<hsize_t> dims(values.shape().dims().begin(), values.shape().dims().end());
  Handle space{
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose};
  Handle d{H5Dcreate2(g.id, path.substr(slash + 1).c_str(), integer ? H5T_STD_I64LE : H5T_IEEE_F32LE, space.id,
                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
           H5Dclose};
  LS_CHECK(d.id >= 0, Error, "HDF5: cannot create dataset ", path);
  const void* data = integer ? static_cast<const void*>(values.data<int64_t>()) : values.data<float>();
  LS_CHECK(H5Dwrite(d.id, integer ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
           Error, "HDF5: cannot write dataset ", path);
}

std::string H5Writer::image() {
  LS_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0, Error, "HDF5: cannot flush the in-memory file");
  const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
  LS_CHECK(size > 0, Error, "HDF5: cannot get the file image");
  std::string bytes(static_cast<size_t>(size), '\0');
  LS_CHECK(H5Fget_file_image(file_, bytes.data(), bytes.size()) == size, Error, "HDF5: cannot copy the file image");
  return bytes;
}

// ---- reading ----

H5Reader::H5Reader(const std::string& image, std::string where) : where_(std::move(where)), image_size_(image.size()) {
  silence_hdf5();
  Handle fapl{core_access(1 << 20), H5Pclose};
  LS_CHECK(!image.empty() && H5Pset_file_image(fapl.id, const_cast<char*>(image.data()), image.size()) >= 0,
           DataLossError, where_, " is empty or cannot be read: the file is corrupt; save it again");
  file_ = H5Fopen("model.weights.h5", H5F_ACC_RDONLY, fapl.id);
  LS_CHECK(file_ >= 0, DataLossError, where_, " is not a readable HDF5 file: the file is corrupt; save it again");
}

H5Reader::~H5Reader() {
  if (file_ >= 0) H5Fclose(file_);
}

bool H5Reader::has(const std::string& path) const {
  // H5Lexists on "a/b" fails when "a" is missing, so each level is checked.
  size_t end = 0;
  while (end != std::string::npos) {
    end = path.find('/', end + 1);
    if (H5Lexists(file_, path.substr(0, end).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

std::vector<std::string> H5Reader::members(const std::string& path) const {
  Handle g{H5Gopen2(file_, path.c_str(), H5P_DEFAULT), H5Gclose};
  LS_CHECK(g.id >= 0, DataLossError, where_, ": group ", path, " is missing or unreadable");
  H5G_info_t info;
  LS_CHECK(H5Gget_info(g.id, &info) >= 0, DataLossError, where_, ": cannot list group ", path);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    LS_CHECK(n >= 0, DataLossError, where_, ": cannot read member ", i, " of group ", path);
    std::string name(static_cast<size_t>(n), '\0');
    H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT);
    names.push_back(name);
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    if (all_digits(a) && all_digits(b) && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return names;
}

Tensor H5Reader::dataset(const std::string& path) const {
  Handle d{H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose};
  LS_CHECK(d.id >= 0, DataLossError, where_, ": dataset ", path, " is missing or unreadable");
  Handle space{H5Dget_space(d.id), H5Sclose};
  const int rank = H5Sget_simple_extent_ndims(space.id);
  LS_CHECK(rank >= 0 && rank <= 8, DataLossError, where_, ": dataset ", path, " has an unreadable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
  std::vector<int64_t> shape(dims.begin(), dims.end());
  uint64_t bytes = 4;
  for (hsize_t n : dims)
    LS_CHECK(!__builtin_mul_overflow(bytes, n, &bytes) && bytes <= image_size_ * 2 + 64, DataLossError, where_,
             ": dataset ", path, " claims more elements than the file holds: the file is corrupt");
  Handle type{H5Dget_type(d.id), H5Tclose};
  const H5T_class_t cls = H5Tget_class(type.id);
  LS_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, DataLossError, where_, ": dataset ", path,
           " holds neither numbers nor integers (HDF5 type class ", static_cast<int>(cls), ")");
  const DType dtype = cls == H5T_FLOAT ? DType::float32 : DType::int64;
  Tensor t = Tensor::empty(Shape(shape), dtype);
  if (t.numel() == 0) return t;
  void* data = dtype == DType::float32 ? static_cast<void*>(t.data<float>()) : t.data<int64_t>();
  LS_CHECK(H5Dread(d.id, dtype == DType::float32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                   data) >= 0,
           DataLossError, where_, ": dataset ", path, " cannot be read: the file is corrupt");
  return t;
}

}  // namespace lockstep::keras::detail
