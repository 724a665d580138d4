// safetensors files: round trips of every dtype, the layout checked by a parser written here from the spec
// (and by Python's safetensors from the venv `make test` makes), corruption and truncation, atomic replacement; CRC32C.
#include "lockstep/train/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "lockstep/core/crc32c.h"
#include "lockstep/tensor/ops.h"
#include "lockstep/train/checkpoint.h"
#include "../interop_python.h"


namespace lockstep::train {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A file laid out by hand from the spec: little-endian header length, header, data.
std::string raw_file(const std::string& header, const std::string& data = "") {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  return {static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype())};
}

std::string hex_of(const Tensor& t) {
  std::string hex;
  for (unsigned char c : bytes_of(t)) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  return hex;
}

// One tensor of every dtype, a strided view, a 0-d scalar and an empty tensor.
std::vector<NamedTensor> every_kind_of_tensor() {
  Tensor matrix = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  return {
      {"dense/kernel", from_vector<float>({1.5f, -2, 3.25f, 0, 7, -8}, {2, 3})},
      {"bf16", from_vector<bfloat16>({bfloat16(1.0f), bfloat16(-0.5f), bfloat16(3.0f)}, {3})},
      {"f64", from_vector<double>({0.1, -1e300}, {2, 1})},
      {"i64", from_vector<int64_t>({int64_t{1} << 40, -3}, {2})},
      {"i32", from_vector<int32_t>({7, -9, 11, 0}, {2, 2})},
      {"u8", from_vector<uint8_t>({0, 255, 17}, {3})},
      {"bool", from_vector<bool>({true, false, true}, {3})},
      {"transposed", raw_ops::transpose(matrix, {1, 0})},
      {"step", scalar(42, DType::int64)},
      {"empty", Tensor::empty({0, 3}, DType::float32)},
  };
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_safetensors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// load_safetensors must throw a one-line DataLossError naming the file and containing `problem`.
void expect_data_loss(const std::string& path, const std::string& problem) {
  try {
    load_safetensors(path);
    ADD_FAILURE() << "no DataLossError; expected one saying: " << problem;
  } catch (const DataLossError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("checkpoint file " + path + " is corrupted: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);  // RFC 3720, B.4
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, MatchesBitwiseDefinitionAtAnyAlignmentAndSplit) {
  auto reference = [](const unsigned char* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
    }
    return ~c;
  };
  std::vector<unsigned char> buf(100);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 37 + 11);
  for (size_t start = 0; start < 8; ++start) {
    for (size_t n = 0; start + n <= buf.size(); ++n) {
      const unsigned char* p = buf.data() + start;
      ASSERT_EQ(crc32c(p, n), reference(p, n)) << "start " << start << ", length " << n;
      const size_t half = n / 2;
      ASSERT_EQ(crc32c(p + half, n - half, crc32c(p, half)), reference(p, n));
    }
  }
}

TEST_F(Safetensors, RoundTripsEveryDtypeViewScalarAndEmptyTensor) {
  const auto tensors = every_kind_of_tensor();
  save_safetensors(path("w.safetensors"), tensors, {{"epoch", "3"}, {"format", "lockstep"}});
  SafetensorsFile file = load_safetensors(path("w.safetensors"));

  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"epoch", "3"}, {"format", "lockstep"}}));
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, expected] = tensors[i];
    EXPECT_EQ(file.tensors[i].name, name);  // the order they were saved in
    const Tensor* got = file.find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->dtype(), expected.dtype()) << name;
    EXPECT_EQ(got->shape(), expected.shape()) << name;
    EXPECT_EQ(bytes_of(*got), bytes_of(expected)) << name;
  }
  EXPECT_EQ(file.find("transposed")->to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(file.find("step")->rank(), 0);
  EXPECT_EQ(file.find("step")->item<int64_t>(), 42);
  EXPECT_EQ(file.find("missing"), nullptr);
}

// Reads the file by hand as the spec describes it, without load_safetensors.
TEST_F(Safetensors, LayoutFollowsTheSpec) {
  save_safetensors(path("w.safetensors"), every_kind_of_tensor(), {{"epoch", "3"}});
  const std::string bytes = read_bytes(path("w.safetensors"));
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "the data section must start 8-byte aligned";
  const std::string header_text = bytes.substr(8, n);
  EXPECT_EQ(header_text.front(), '{');
  const size_t close = header_text.rfind('}');
  EXPECT_EQ(header_text.find_first_not_of(' ', close + 1), std::string::npos) << "padding must be spaces";
  const json header = json::parse(header_text);
  const std::string data = bytes.substr(8 + n);

  const json& meta = header.at("__metadata__");
  EXPECT_EQ(meta.at("epoch"), "3");
  const std::map<std::string, std::pair<std::string, json>> expected = {
      {"dense/kernel", {"F32", {2, 3}}}, {"bf16", {"BF16", {3}}},
      {"f64", {"F64", {2, 1}}},          {"i64", {"I64", {2}}},
      {"i32", {"I32", {2, 2}}},          {"u8", {"U8", {3}}},
      {"bool", {"BOOL", {3}}},           {"transposed", {"F32", {3, 2}}},
      {"step", {"I64", json::array()}},  {"empty", {"F32", {0, 3}}}};
  EXPECT_EQ(header.size(), expected.size() + 1);
  uint64_t end = 0;
  for (const auto& name : {"dense/kernel", "bf16", "f64", "i64", "i32", "u8", "bool", "transposed", "step", "empty"}) {
    const json& entry = header.at(name);
    EXPECT_EQ(entry.at("dtype"), expected.at(name).first) << name;
    EXPECT_EQ(entry.at("shape"), expected.at(name).second) << name;
    const uint64_t begin = entry.at("data_offsets")[0], stop = entry.at("data_offsets")[1];
    EXPECT_EQ(begin, end) << name << " must follow the previous tensor";  // packed in the order saved
    end = stop;
    const std::string tensor_bytes = data.substr(begin, stop - begin);
    const std::string crc = meta.at(std::string("crc32c/") + name);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", crc32c(tensor_bytes.data(), tensor_bytes.size()));
    EXPECT_EQ(crc, hex) << name;
  }
  EXPECT_EQ(end, data.size());
  // Little-endian values, written out by hand: 1.5f is 0x3FC00000, -2.0f is 0xC0000000.
  EXPECT_EQ(data.substr(0, 8), std::string("\x00\x00\xC0\x3F\x00\x00\x00\xC0", 8));
  const uint64_t t = header.at("transposed").at("data_offsets")[0];
  EXPECT_EQ(data.substr(t, 8), std::string("\x00\x00\x80\x3F\x00\x00\x80\x40", 8)) << "1.0f then 4.0f";
  const uint64_t s = header.at("step").at("data_offsets")[0];
  EXPECT_EQ(data.substr(s, 8), std::string("\x2A\0\0\0\0\0\0\0", 8));
}

TEST_F(Safetensors, HeaderIsPaddedToEightBytesForAnyNameLength) {
  for (size_t len = 1; len <= 16; ++len) {
    save_safetensors(path("w.safetensors"), {{std::string(len, 'w'), scalar(1)}});
    const std::string bytes = read_bytes(path("w.safetensors"));
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << "name length " << len;
    EXPECT_EQ(bytes.size(), 8 + n + 4);
    EXPECT_EQ(load_safetensors(path("w.safetensors")).find(std::string(len, 'w'))->item<float>(), 1.0f);
  }
}

// The real reader: every tensor's dtype, shape and bytes as Python sees them.
TEST_F(Safetensors, PythonSafetensorsReadsTheFile) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("safetensors", why);
  if (python.empty()) GTEST_SKIP() << why << "; the layout is checked by LayoutFollowsTheSpec";
  const auto tensors = every_kind_of_tensor();
  save_safetensors(path("w.safetensors"), tensors, {{"epoch", "3"}});
  const std::map<DType, std::string> dtype_names = {
      {DType::float32, "F32"}, {DType::bfloat16, "BF16"}, {DType::float64, "F64"}, {DType::int64, "I64"},
      {DType::int32, "I32"},   {DType::uint8, "U8"},      {DType::bool_, "BOOL"}};
  json expected = json::object();
  for (const auto& [name, t] : tensors) expected[name] = {dtype_names.at(t.dtype()), t.shape().dims(), hex_of(t)};
  write_bytes(path("expected.json"), expected.dump());
  write_bytes(path("check.py"),
              "import json, sys, safetensors\n"
              "got = {n: [t['dtype'], list(t['shape']), bytes(t['data']).hex()]\n"
              "       for n, t in safetensors.deserialize(open(sys.argv[1], 'rb').read())}\n"
              "sys.exit(0 if got == json.load(open(sys.argv[2])) else 1)\n");
  EXPECT_EQ(std::system(
                (python + " " + path("check.py") + " " + path("w.safetensors") + " " + path("expected.json")).c_str()),
            0);
}

// Python's NumPy reader: load_file's arrays, and safe_open's __metadata__ holding the caller's entries plus a
// crc32c/<name> per tensor that matches a CRC32C computed in Python. NumPy has no bfloat16, so that tensor is left out.
TEST_F(Safetensors, PythonNumpyReadsArraysAndMetadata) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("safetensors.numpy", why);
  if (python.empty()) GTEST_SKIP() << why << "; the layout is checked by LayoutFollowsTheSpec";
  std::vector<NamedTensor> tensors;
  for (auto& t : every_kind_of_tensor())
    if (t.tensor.dtype() != DType::bfloat16) tensors.push_back(t);
  const std::map<std::string, std::string> metadata = {{"epoch", "3"}, {"format", "np"}};
  save_safetensors(path("w.safetensors"), tensors, metadata);
  const std::map<DType, std::string> numpy_names = {{DType::float32, "float32"}, {DType::float64, "float64"},
                                                    {DType::int64, "int64"},     {DType::int32, "int32"},
                                                    {DType::uint8, "uint8"},     {DType::bool_, "bool"}};
  json expected = {{"tensors", json::object()}, {"metadata", metadata}};
  for (const auto& [name, t] : tensors)
    expected["tensors"][name] = {numpy_names.at(t.dtype()), t.shape().dims(), hex_of(t)};
  write_bytes(path("expected.json"), expected.dump());
  write_bytes(path("check.py"),
              "import json, sys\n"
              "from safetensors import safe_open\n"
              "from safetensors.numpy import load_file\n"
              "def crc32c(data):  # Castagnoli, reflected\n"
              "    crc = 0xFFFFFFFF\n"
              "    for b in data:\n"
              "        crc ^= b\n"
              "        for _ in range(8):\n"
              "            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))\n"
              "    return crc ^ 0xFFFFFFFF\n"
              "arrays = load_file(sys.argv[1])\n"
              "with safe_open(sys.argv[1], framework='numpy') as f:\n"
              "    metadata = f.metadata()\n"
              "expected = json.load(open(sys.argv[2]))\n"
              "got = {n: [str(a.dtype), list(a.shape), a.tobytes().hex()] for n, a in arrays.items()}\n"
              "crcs = {'crc32c/' + n: '%08x' % crc32c(a.tobytes()) for n, a in arrays.items()}\n"
              "ok = got == expected['tensors'] and metadata == {**expected['metadata'], **crcs}\n"
              "if not ok: print('python read', got, metadata, file=sys.stderr)\n"
              "sys.exit(0 if ok else 1)\n");
  EXPECT_EQ(std::system(
                (python + " " + path("check.py") + " " + path("w.safetensors") + " " + path("expected.json")).c_str()),
            0);
}

// A lockstep checkpoint is a plain safetensors file: Python reads its tensors by "<object>/<name>" and the
// run's position from __metadata__.
TEST_F(Safetensors, PythonReadsACheckpoint) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("safetensors.numpy", why);
  if (python.empty()) GTEST_SKIP() << why;
  Variable epoch(scalar(int64_t{4}, DType::int64), {.name = "epoch", .trainable = false});
  Variable w(from_vector<float>({1.5f, -2.f}, {2}), {.name = "w"});
  const std::string saved = Checkpoint({{"epoch", epoch}, {"w", w}}).save(path("ckpt"));
  write_bytes(path("check.py"),
              "import sys\n"
              "from safetensors import safe_open\n"
              "with safe_open(sys.argv[1], framework='numpy') as f:\n"
              "    meta = f.metadata()\n"
              "    ok = (meta['format'] == 'lockstep.checkpoint' and meta['epoch'] == '4' and meta['save_counter'] == '1'\n"
              "          and f.get_tensor('w').tolist() == [1.5, -2.0] and int(f.get_tensor('epoch')) == 4)\n"
              "    if not ok: print('python read', meta, list(f.keys()), file=sys.stderr)\n"
              "sys.exit(0 if ok else 1)\n");
  EXPECT_EQ(std::system((python + " " + path("check.py") + " " + saved + ".safetensors").c_str()), 0);
}

TEST_F(Safetensors, FilesWithoutChecksumsLoadUnchecked) {
  write_bytes(path("other.safetensors"),
              raw_file(R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
                       R"("a":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]}}  )",
                       std::string("\x01\x02\x03\x04\x05\x00\x00\x00", 8)));
  SafetensorsFile file = load_safetensors(path("other.safetensors"));
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].name, "a");  // in data order
  EXPECT_EQ(file.find("a")->to_vector<int>(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(file.find("b")->item<int32_t>(), 5);
}

TEST_F(Safetensors, FlippedByteFailsTheCrcOfThatTensor) {
  save_safetensors(path("ckpt.safetensors"), every_kind_of_tensor());
  std::string bytes = read_bytes(path("ckpt.safetensors"));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  bytes[8 + n + 5] ^= 0x10;  // inside dense/kernel, the first tensor
  write_bytes(path("ckpt.safetensors"), bytes);
  expect_data_loss(path("ckpt.safetensors"), "tensor 'dense/kernel' fails its CRC32C check (stored ");
  expect_data_loss(path("ckpt.safetensors"), "; restore from an earlier checkpoint");
}

TEST_F(Safetensors, TruncatedFileIsDataLoss) {
  save_safetensors(path("ckpt.safetensors"), every_kind_of_tensor());
  const std::string bytes = read_bytes(path("ckpt.safetensors"));
  write_bytes(path("ckpt.safetensors"), bytes.substr(0, bytes.size() - 20));
  expect_data_loss(path("ckpt.safetensors"), "the file is truncated");
  write_bytes(path("ckpt.safetensors"), bytes.substr(0, 5));
  expect_data_loss(path("ckpt.safetensors"), "too few for the 8-byte header length");
}

TEST_F(Safetensors, GarbageHeaderLengthIsDataLoss) {
  save_safetensors(path("ckpt.safetensors"), every_kind_of_tensor());
  std::string bytes = read_bytes(path("ckpt.safetensors"));
  bytes.replace(0, 8, "\xDE\xAD\xBE\xEF\xDE\xAD\xBE\xEF");
  write_bytes(path("ckpt.safetensors"), bytes);
  expect_data_loss(path("ckpt.safetensors"), "header length 17275436393656397278 is larger than the file");
}

TEST_F(Safetensors, InvalidJsonIsDataLoss) {
  save_safetensors(path("ckpt.safetensors"), every_kind_of_tensor());
  std::string bytes = read_bytes(path("ckpt.safetensors"));
  bytes[8 + 3] = '\n';  // inside the first key's quotes
  write_bytes(path("ckpt.safetensors"), bytes);
  expect_data_loss(path("ckpt.safetensors"), "invalid JSON header");
}

TEST_F(Safetensors, MalformedHeadersAreDataLoss) {
  struct Case {
    std::string header, data, problem;
  };
  const std::string eight(8, '\0');
  const std::vector<Case> cases = {
      {R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", eight.substr(0, 4),
       "tensor 'a' has unknown dtype 'F16'"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight,
       "tensor 'a' has data_offsets [0, 8], but dtype F32 and shape (3,) need 12 bytes"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
       eight, "tensor 'b' (data_offsets [4, 8]) overlaps tensor 'a'"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight,
       "tensor 'a' (data_offsets [4, 8]) leaves a gap of 4 bytes"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight, "runs past the end of the 8-byte data"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight, "4 unexpected bytes follow the last tensor"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", eight, "shape that is not a list of sizes"},
      {R"({"a":{"dtype":"F32","shape":[1]}})", eight, "needs dtype, shape and data_offsets"},
      {R"([1, 2])", "", "the JSON header is not an object"},
      {R"({"__metadata__":{"epoch":3}})", "", "__metadata__ value of 'epoch' is not a string"},
      {R"({"__metadata__":{"crc32c/a":"xyz"}})", "", "__metadata__ entry 'crc32c/a' is 'xyz', not 8 hex digits"},
      {R"({"__metadata__":{"crc32c/a":"00000000"}})", "", "a CRC32C for tensor 'a', which is not in the file"},
      {R"({"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})", "\x02", "holds bytes other than 0 and 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header);
    write_bytes(path("bad.safetensors"), raw_file(c.header, c.data));
    expect_data_loss(path("bad.safetensors"), c.problem);
  }
}

TEST_F(Safetensors, MissingFileIsNotFoundNamingIt) {
  try {
    load_safetensors(path("nope.safetensors"));
    ADD_FAILURE() << "no NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find(path("nope.safetensors")), std::string::npos) << e.what();
  }
}

TEST_F(Safetensors, BadNamesAreValueErrors) {
  EXPECT_THROW(save_safetensors(path("w.safetensors"), {{"a", scalar(1)}, {"a", scalar(2)}}), ValueError);
  EXPECT_THROW(save_safetensors(path("w.safetensors"), {{"__metadata__", scalar(1)}}), ValueError);
  EXPECT_THROW(save_safetensors(path("w.safetensors"), {{"a", scalar(1)}}, {{"crc32c/a", "0"}}), ValueError);
  EXPECT_FALSE(fs::exists(path("w.safetensors")));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(Safetensors, SaveReplacesTheOldFileAndLeavesNoTemporaryFile) {
  save_safetensors(path("ckpt.safetensors"), {{"step", scalar(1, DType::int64)}});
  save_safetensors(path("ckpt.safetensors"), {{"step", scalar(2, DType::int64)}, {"extra", scalar(0)}});
  EXPECT_EQ(load_safetensors(path("ckpt.safetensors")).find("step")->item<int64_t>(), 2);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(Safetensors, FailedSaveRemovesItsTemporaryFile) {
  fs::create_directories(dir_ / "ckpt" / "inside");  // a non-empty directory cannot be renamed over
  try {
    save_safetensors(path("ckpt"), {{"a", scalar(1)}});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + path("ckpt") + ": rename"),
              std::string::npos)
        << e.what();
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"ckpt"});
}

TEST_F(Safetensors, SaveIntoMissingDirectoryNamesIt) {
  const std::string missing = path("no/such/dir");
  try {
    save_safetensors(missing + "/ckpt.safetensors", {{"a", scalar(1)}});
    ADD_FAILURE() << "no NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("directory " + missing + " does not exist"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockstep::train
