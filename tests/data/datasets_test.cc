// mnist / fashion_mnist loading: the search order, IDX (raw and gzipped) and .npz (stored and deflated, by
// libzip) fixtures written here, every kind of damaged file, the not-found message, and, when this machine has
// them, archives written by NumPy and the real Fashion-MNIST of Debian's dataset-fashion-mnist.
#include "lockstep/data/datasets.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <tuple>

#include "lockstep/data/readers.h"
#include "../interop_python.h"

namespace lockstep::datasets {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// A temporary directory, removed with its contents at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("lockstep_datasets_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Sets (or unsets, with nullopt) an environment variable for the scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, std::optional<std::string> value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

void write(const fs::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  gzclose(f);
}
Bytes read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void put32be(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

// An IDX file of unsigned bytes.
Bytes idx(const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b = {0, 0, 0x08, uint8_t(dims.size())};
  for (uint32_t d : dims) put32be(b, d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
// n images whose pixels are (image + pixel) % 256, and labels image % 10.
Bytes image_bytes(uint32_t n, uint32_t side = 28) {
  Bytes b(size_t(n) * side * side);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i / (side * side) + i % (side * side));
  return b;
}
Bytes label_bytes(uint32_t n) {
  Bytes b(n);
  for (uint32_t i = 0; i < n; ++i) b[i] = uint8_t(i % 10);
  return b;
}

const char* kFiles[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

// A valid data set of 12 train and 5 test images in `dir`, gzipped or raw.
void write_idx_set(const fs::path& dir, bool gz) {
  fs::create_directories(dir);
  const Bytes files[4] = {idx({12, 28, 28}, image_bytes(12)), idx({12}, label_bytes(12)), idx({5, 28, 28}, image_bytes(5)),
                          idx({5}, label_bytes(5))};
  for (int i = 0; i < 4; ++i) {
    if (gz) write_gz(dir / (std::string(kFiles[i]) + ".gz"), files[i]);
    else write(dir / kFiles[i], files[i]);
  }
}

Bytes npy(const std::vector<uint64_t>& dims, const Bytes& data, const std::string& descr = "|u1") {
  std::string shape = "(";
  for (uint64_t d : dims) shape += std::to_string(d) + ", ";
  if (dims.size() > 1) shape.resize(shape.size() - 2);
  if (dims.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  const std::string head = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
  Bytes b(head.begin(), head.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// A zip of the members, stored or deflated, written by libzip into memory.
Bytes zip(const std::vector<std::pair<std::string, Bytes>>& members, bool deflate) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_t* archive = buffer ? zip_open_from_source(buffer, ZIP_TRUNCATE, &error) : nullptr;
  EXPECT_NE(archive, nullptr) << zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!archive) return {};
  zip_source_keep(buffer);  // outlives zip_close, which writes the archive into it
  for (const auto& [name, data] : members) {
    const zip_int64_t index =
        zip_file_add(archive, name.c_str(), zip_source_buffer(archive, data.data(), data.size(), 0), 0);
    EXPECT_GE(index, 0) << zip_strerror(archive);
    EXPECT_EQ(zip_set_file_compression(archive, zip_uint64_t(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0), 0);
  }
  EXPECT_EQ(zip_close(archive), 0) << zip_strerror(archive);
  zip_stat_t st;
  Bytes out;
  if (zip_source_stat(buffer, &st) == 0 && zip_source_open(buffer) == 0) {
    out.resize(st.size);
    EXPECT_EQ(zip_source_read(buffer, out.data(), out.size()), zip_int64_t(out.size()));
    zip_source_close(buffer);
  }
  zip_source_free(buffer);
  return out;
}

// Overwrites a 4-byte field of the first member in its local header (at byte 0) and/or its central directory
// entry (at the offset the end record, the archive's last 22 bytes, gives).
enum Field { kCrc, kCompressedSize, kSize };
void patch(Bytes& b, Field field, uint32_t value, bool local, bool central) {
  auto put = [&](size_t offset) {
    for (int i = 0; i < 4; ++i) b[offset + 4 * size_t(field) + size_t(i)] = uint8_t(value >> (8 * i));
  };
  size_t directory = 0;
  for (size_t i = 4; i-- > 0;) directory = directory << 8 | b[b.size() - 6 + i];
  if (local) put(14);
  if (central) put(directory + 16);
}

Bytes mnist_npz(bool deflate, const std::string& x_test_descr = "|u1") {
  return zip({{"x_train.npy", npy({12, 28, 28}, image_bytes(12))},
              {"y_train.npy", npy({12}, label_bytes(12))},
              {"x_test.npy", npy({5, 28, 28}, image_bytes(5), x_test_descr)},
              {"y_test.npy", npy({5}, label_bytes(5))}},
             deflate);
}

void expect_fixture(const std::pair<Split, Split>& data) {
  const auto& [train, test] = data;
  EXPECT_EQ(train.images.shape(), (Shape{12, 28, 28}));
  EXPECT_EQ(train.images.dtype(), DType::uint8);
  EXPECT_EQ(train.labels.shape(), (Shape{12}));
  EXPECT_EQ(test.images.shape(), (Shape{5, 28, 28}));
  Bytes pixels = image_bytes(12);
  EXPECT_EQ(0, std::memcmp(train.images.raw_data(), pixels.data(), pixels.size()));
  EXPECT_EQ(test.labels.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
}

// The message of the DataLossError that loading `dir` throws; fails when there is none.
std::string data_loss(const fs::path& dir) {
  try {
    load_idx_directory(dir.string());
  } catch (const DataLossError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataLossError for " << dir;
  return "";
}

TEST(Datasets, ReadsRawAndGzippedIdxDirectories) {
  TempDir tmp;
  write_idx_set(tmp.path / "raw", false);
  write_idx_set(tmp.path / "gz", true);
  expect_fixture(load_idx_directory((tmp.path / "raw").string()));
  expect_fixture(load_idx_directory((tmp.path / "gz").string()));
}

TEST(Datasets, ReadsStoredAndDeflatedNpz) {
  TempDir tmp;
  for (bool deflate : {false, true}) {
    fs::path dir = tmp.path / (deflate ? "deflated" : "stored");
    fs::create_directories(dir);
    write(dir / "mnist.npz", mnist_npz(deflate));
    expect_fixture(load_idx_directory(dir.string()));
    EXPECT_EQ(data::read_npz((dir / "mnist.npz").string()).size(), 4u);
  }
  EXPECT_LT(mnist_npz(true).size(), mnist_npz(false).size() / 2) << "the deflated fixture is not deflated";
  // Members that are not .npy are not arrays: np.load would not list them either.
  write(tmp.path / "extra.npz", zip({{"readme.txt", {'h', 'i'}}, {"y.npy", npy({3}, label_bytes(3))}}, true));
  const auto arrays = data::read_npz((tmp.path / "extra.npz").string());
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays.at("y").to_vector<int>(), (std::vector<int>{0, 1, 2}));
  try {
    data::read_npz((tmp.path / "missing.npz").string());
    FAIL() << "no NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.npz: cannot open ("), std::string::npos) << e.what();
  }
}

// Archives written by NumPy itself (np.savez and np.savez_compressed), when this machine has it.
TEST(Datasets, ReadsNpzWrittenByNumpy) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("numpy", why);
  if (python.empty()) GTEST_SKIP() << why << "; the zip layout is checked by ReadsStoredAndDeflatedNpz";
  TempDir tmp;
  const std::string script = (tmp.path / "write.py").string(), dir = tmp.path.string();
  std::ofstream(script)
      << "import sys, numpy as np\n"
         "a = dict(images=(np.arange(3 * 28 * 28) % 251).astype(np.uint8).reshape(3, 28, 28),\n"
         "         labels=np.array([7, 0, 9], np.uint8), scalar=np.uint8(5), empty=np.zeros((0, 4), np.uint8))\n"
         "np.savez(sys.argv[1] + '/plain.npz', **a)\n"
         "np.savez_compressed(sys.argv[1] + '/compressed.npz', **a)\n"
         "np.savez(sys.argv[1] + '/floats.npz', x=np.ones((2, 3), np.float32), n=np.arange(4))\n";
  ASSERT_EQ(std::system((python + " " + script + " " + dir).c_str()), 0);
  for (const char* name : {"plain.npz", "compressed.npz"}) {
    SCOPED_TRACE(name);
    const auto arrays = data::read_npz(dir + "/" + name);
    ASSERT_EQ(arrays.size(), 4u);
    const Tensor& images = arrays.at("images");
    ASSERT_EQ(images.shape(), (Shape{3, 28, 28}));
    for (int64_t i = 0; i < images.numel(); ++i) ASSERT_EQ(images.data<uint8_t>()[i], i % 251) << i;
    EXPECT_EQ(arrays.at("labels").to_vector<int>(), (std::vector<int>{7, 0, 9}));
    EXPECT_EQ(arrays.at("scalar").shape(), Shape{});
    EXPECT_EQ(arrays.at("scalar").to_vector<int>(), std::vector<int>{5});
    EXPECT_EQ(arrays.at("empty").shape(), (Shape{0, 4}));
  }
  // Only uint8 arrays are read for now; other dtypes are refused by name.
  try {
    data::read_npz(dir + "/floats.npz");
    FAIL() << "float32 member accepted";
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("floats.npz:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds dtype '<"), std::string::npos) << e.what();
  }
}

TEST(Datasets, SearchesLockstepDatasetsFirst) {
  TempDir tmp, home;
  write_idx_set(tmp.path / "fashion-mnist", true);
  write(tmp.path / "mnist.npz", mnist_npz(false));
  ScopedEnv env("LOCKSTEP_DATASETS", tmp.path.string()), no_home("HOME", home.path.string());
  expect_fixture(fashion_mnist::load_data());
  expect_fixture(mnist::load_data());
}

TEST(Datasets, SearchesTheKerasCache) {
  TempDir home;
  write_idx_set(home.path / ".keras" / "datasets" / "fashion-mnist", true);
  write(home.path / ".keras" / "datasets" / "mnist.npz", mnist_npz(true));
  ScopedEnv env("LOCKSTEP_DATASETS", std::nullopt), h("HOME", home.path.string());
  expect_fixture(fashion_mnist::load_data());
  expect_fixture(mnist::load_data());
}

TEST(Datasets, MissingDataSetListsEveryPathTried) {
  if (fs::exists("/usr/share/datasets/mnist")) GTEST_SKIP() << "/usr/share/datasets/mnist exists here";
  TempDir tmp, home;
  ScopedEnv env("LOCKSTEP_DATASETS", tmp.path.string()), h("HOME", home.path.string());
  try {
    mnist::load_data();
    FAIL() << "no NotFoundError";
  } catch (const NotFoundError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
    for (const fs::path& p : {tmp.path / "mnist", tmp.path, home.path / ".keras" / "datasets", fs::path("/usr/share/datasets/mnist")})
      EXPECT_NE(m.find(p.string() + " ("), std::string::npos) << p << " missing from: " << m;
    EXPECT_NE(m.find("LOCKSTEP_DATASETS"), std::string::npos) << m;
  }
  try {
    load_idx_directory((tmp.path / "nowhere").string());
    FAIL() << "no NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere (no such directory)"), std::string::npos) << e.what();
  }
}

// Each damaged file, written over one file of a valid raw set: the error names the file and the reason.
TEST(Datasets, DamagedFilesAreDataLossErrors) {
  struct Case {
    const char* what;
    int file;
    std::function<Bytes()> bytes;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"bad magic", 0, [] { Bytes b = idx({12, 28, 28}, image_bytes(12)); b[3] = 4; return b; }, "bad magic number 0x00000804, expected 0x00000803"},
      {"wrong dims", 0, [] { return idx({12, 27, 28}, Bytes(12 * 27 * 28, 1)); }, "shape (12, 27, 28)"},
      {"short data", 0, [] { Bytes b = idx({12, 28, 28}, image_bytes(12)); b.resize(b.size() - 100); return b; }, "(truncated)"},
      {"trailing data", 1, [] { Bytes b = idx({12}, label_bytes(12)); b.push_back(0); return b; }, "(trailing bytes)"},
      {"label count", 3, [] { return idx({4}, label_bytes(4)); }, "holds 4 labels but"},
      {"label > 9", 1, [] { Bytes l = label_bytes(12); l[7] = 12; return idx({12}, l); }, "label 12 at index 7 is outside 0..9"},
      {"empty file", 2, [] { return Bytes{}; }, "runs past the end"},
      // Found by fuzz_idx: a 0 among huge dimensions passed the size check and overflowed the shape's element count.
      {"empty dimension", 0, [] { return idx({0xFFFFFFFF, 0xFFFFFFFF, 0}, Bytes{}); }, "shape (4294967295, 4294967295, 0) is empty but its other dimensions are too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir tmp;
    write_idx_set(tmp.path, false);
    write(tmp.path / kFiles[c.file], c.bytes());
    std::string m = data_loss(tmp.path);
    EXPECT_NE(m.find(c.reason), std::string::npos) << m;
    EXPECT_NE(m.find(kFiles[c.file]), std::string::npos) << m;
  }
}

TEST(Datasets, DamagedGzipIsADataLossError) {
  for (bool truncate : {false, true}) {
    SCOPED_TRACE(truncate ? "truncated" : "bad CRC");
    TempDir tmp;
    write_idx_set(tmp.path, true);
    fs::path file = tmp.path / "t10k-images-idx3-ubyte.gz";
    Bytes b = read(file);
    if (truncate) b.resize(b.size() / 2);
    else b[b.size() - 6] ^= 0xff;  // inside the CRC-32 of the gzip trailer
    write(file, b);
    std::string m = data_loss(tmp.path);
    EXPECT_NE(m.find(file.string()), std::string::npos) << m;
    EXPECT_NE(m.find("gzip stream is"), std::string::npos) << m;
  }
}

TEST(Datasets, DamagedNpzIsADataLossError) {
  struct Case {
    const char* what;
    std::function<Bytes()> bytes;
    const char* reason;
  };
  // Flips one bit of the first member's data; patches a field of the first member's headers.
  auto flipped = [](bool deflate, size_t at, uint8_t bits) {
    Bytes b = mnist_npz(deflate);
    EXPECT_EQ(b[28] | b[29], 0) << "x_train.npy's local header has an extra field; its data does not start at byte 41";
    b[at] ^= bits;
    return b;
  };
  auto patched = [](bool deflate, std::vector<std::tuple<Field, uint32_t, bool>> fields) {
    Bytes b = mnist_npz(deflate);
    for (auto [field, value, central] : fields) patch(b, field, value, true, central);
    return b;
  };
  const size_t first_data = 30 + 11;  // after x_train.npy's local header and name; libzip writes no extra field
  const std::vector<Case> cases = {
      {"CRC", [&] { return flipped(false, first_data + 200, 1); }, "CRC mismatch in member x_train.npy"},
      {"deflate CRC", [&] { return flipped(true, 100, 0x55); }, "CRC mismatch in member x_train.npy"},
      {"deflate stream", [&] { return flipped(true, first_data, 6); },  // a reserved block type
       "deflated member x_train.npy cannot be read (libzip: "},
      {"truncated", [] { Bytes b = mnist_npz(true); b.resize(b.size() - 30); return b; }, "not a zip archive, or its central directory is damaged"},
      {"not a zip", [] { return Bytes{'P', 'K', 3, 4, 'n', 'o', 't'}; }, "not a zip archive"},
      {"empty", [] { return Bytes{}; }, "not a zip archive"},
      {"dtype", [] { return mnist_npz(false, "<f4"); }, "holds dtype '<f4'"},
      {"missing member", [] { return zip({{"x_train.npy", npy({1, 28, 28}, image_bytes(1))}}, false); }, "has no y_train.npy"},
      {"member not .npy", [] { return zip({{"x_train.npy", Bytes(100, 'x')}}, true); }, "x_train.npy: bad magic string (not a .npy array)"},
      // Found while fixing fuzz_idx's finding: the same in .npy shapes, and (4, 2**62) wrapping around to 0 bytes.
      {"empty dimension", [] { return zip({{"x_train.npy", npy({0xFFFFFFFF, 0xFFFFFFFF, 0}, {})}}, false); },
       "shape (4294967295, 4294967295, 0) is empty but its other dimensions are too large"},
      {"wrapping shape", [] { return zip({{"x_train.npy", npy({4, uint64_t(1) << 62}, {})}}, false); },
       "needs more bytes of data but 0 follow the header"},
      {"local header disagrees", [&] { return patched(false, {{kCrc, 0x12345678, false}}); }, "disagrees with the central directory"},
      {"stored size", [&] { return patched(false, {{kSize, 9537, true}}); },  // x_train.npy is 128 + 12 * 784 bytes
       "stored member x_train.npy has 9536 bytes, expected 9537"},
      {"4 GB deflated", [&] { return patched(true, {{kSize, 4000000000u, true}}); }, "deflated member x_train.npy claims 4000000000 bytes from"},
      {"4 GB stored", [&] { return patched(false, {{kSize, 4000000000u, true}, {kCompressedSize, 4000000000u, true}}); }, "central directory is damaged"},
  };

  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir tmp;
    write(tmp.path / "mnist.npz", c.bytes());
    std::string m = data_loss(tmp.path);
    EXPECT_NE(m.find(c.reason), std::string::npos) << m;
    EXPECT_NE(m.find("mnist.npz"), std::string::npos) << m;
  }
}

TEST(Datasets, RealFashionMnist) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir home;
  ScopedEnv env("LOCKSTEP_DATASETS", std::nullopt), h("HOME", home.path.string());
  auto [train, test] = fashion_mnist::load_data();
  EXPECT_EQ(train.images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(test.images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(test.labels.shape(), (Shape{10000}));
  std::vector<int> histogram(10, 0);
  for (int label : train.labels.to_vector<int>()) ++histogram[size_t(label)];
  EXPECT_EQ(histogram, std::vector<int>(10, 6000));
}

}  // namespace
}  // namespace lockstep::datasets
