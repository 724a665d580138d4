// mnist / fashion_mnist loading: the search order, IDX (raw and gzipped) and .npz (stored and deflated)
// fixtures written here, every kind of damaged file, the not-found message, and the real Fashion-MNIST
// when Debian's dataset-fashion-mnist is installed.
#include "lockstep/data/datasets.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "lockstep/data/readers.h"

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
void put_le(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
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

Bytes npy(const std::vector<uint32_t>& dims, const Bytes& data, const std::string& descr = "|u1") {
  std::string shape = "(";
  for (uint32_t d : dims) shape += std::to_string(d) + ", ";
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

// A zip of the members, stored or deflated (raw deflate, as zipfile writes it).
Bytes zip(const std::vector<std::pair<std::string, Bytes>>& members, bool deflate) {
  Bytes out, central;
  for (const auto& [name, data] : members) {
    Bytes body = data;
    if (deflate) {
      z_stream zs{};
      deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&zs, uLong(data.size())));
      zs.next_in = const_cast<Bytef*>(data.data());
      zs.avail_in = uInt(data.size());
      zs.next_out = body.data();
      zs.avail_out = uInt(body.size());
      ::deflate(&zs, Z_FINISH);
      body.resize(zs.total_out);
      deflateEnd(&zs);
    }
    const uint32_t crc = uint32_t(crc32(0, data.data(), uInt(data.size())));
    const uint64_t local = out.size();
    auto common = [&](Bytes& b) {
      put_le(b, 20, 2), put_le(b, 0, 2), put_le(b, deflate ? 8 : 0, 2), put_le(b, 0, 4);
      put_le(b, crc, 4), put_le(b, body.size(), 4), put_le(b, data.size(), 4), put_le(b, name.size(), 2), put_le(b, 0, 2);
    };
    put_le(out, 0x04034b50, 4), common(out);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), body.begin(), body.end());
    put_le(central, 0x02014b50, 4), put_le(central, 20, 2), common(central);
    put_le(central, 0, 2), put_le(central, 0, 2), put_le(central, 0, 2), put_le(central, 0, 4), put_le(central, local, 4);
    central.insert(central.end(), name.begin(), name.end());
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  put_le(out, 0x06054b50, 4), put_le(out, 0, 2), put_le(out, 0, 2), put_le(out, members.size(), 2);
  put_le(out, members.size(), 2), put_le(out, central.size(), 4), put_le(out, cd_offset, 4), put_le(out, 0, 2);
  return out;
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
  const std::vector<Case> cases = {
      {"CRC", [] { Bytes b = mnist_npz(false); b[200] ^= 1; return b; }, "CRC mismatch in member x_train.npy"},
      {"truncated", [] { Bytes b = mnist_npz(true); b.resize(b.size() - 30); return b; }, "no end-of-central-directory"},
      {"dtype", [] { return mnist_npz(false, "<f4"); }, "holds dtype '<f4'"},
      {"missing member", [] { return zip({{"x_train.npy", npy({1, 28, 28}, image_bytes(1))}}, false); }, "has no y_train.npy"},
      {"deflate", [] { Bytes b = mnist_npz(true); b[100] ^= 0x55; return b; }, "mnist.npz: "},
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
