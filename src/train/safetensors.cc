// safetensors files: an 8-byte little-endian header length N, N bytes of JSON header padded with spaces,
// then each tensor's row-major little-endian bytes, packed in header order. Saving goes through AtomicFile;
// loading validates the layout as the Python package does.
#include "lockstep/train/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "lockstep/core/crc32c.h"
#include "lockstep/core/files.h"

namespace lockstep::train {

namespace {
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so must the host be");

using Json = nlohmann::ordered_json;  // keeps header keys in the order the tensors are packed

const std::string kMetadataKey = "__metadata__";
const std::string kCrcPrefix = "crc32c/";

// safetensors' names for our dtypes.
constexpr std::array<std::pair<DType, const char*>, 7> kDtypeNames = {{{DType::float32, "F32"},
                                                                       {DType::bfloat16, "BF16"},
                                                                       {DType::float64, "F64"},
                                                                       {DType::int64, "I64"},
                                                                       {DType::int32, "I32"},
                                                                       {DType::uint8, "U8"},
                                                                       {DType::bool_, "BOOL"}}};

const char* safetensors_dtype(DType t) {
  for (const auto& [dtype, name] : kDtypeNames)
    if (dtype == t) return name;
  return "?";
}

std::optional<DType> dtype_from_safetensors(const std::string& s) {
  for (const auto& [dtype, name] : kDtypeNames)
    if (s == name) return dtype;
  return std::nullopt;
}

std::string hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

size_t byte_size(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
}

// Owns a file descriptor.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly n bytes at `offset`; false when the file ends first.
bool read_all(int fd, void* data, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

[[noreturn]] void throw_corrupted(const std::string& path, const std::string& problem) {
  throw DataLossError(
      make_message("checkpoint file ", path, " is corrupted: ", problem, "; restore from an earlier checkpoint"));
}

// One tensor's header entry, checked for types but not yet against the file.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& path, const std::string& name, const Json& j) {
  auto bad = [&](const char* what) {
    throw_corrupted(path, make_message("header entry of tensor '", name, "' ", what));
  };
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j.contains("data_offsets"))
    bad("needs dtype, shape and data_offsets");
  const Json &dtype = j.at("dtype"), &shape = j.at("shape"), &offsets = j.at("data_offsets");
  if (!dtype.is_string()) bad("has a dtype that is not a string");
  auto parsed = dtype_from_safetensors(dtype.get<std::string>());
  if (!parsed)
    throw_corrupted(path, make_message("tensor '", name, "' has unknown dtype '", dtype.get<std::string>(),
                                       "' (lockstep reads F32, BF16, F64, I64, I32, U8 and BOOL)"));
  Entry e{name, *parsed, {}, 0, 0};
  if (!shape.is_array()) bad("has a shape that is not a list");
  for (const Json& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t{INT64_MAX})
      bad("has a shape that is not a list of sizes");
    e.shape.push_back(d.get<int64_t>());
  }
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    bad("needs data_offsets [begin, end]");
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  return e;
}

// Checks that the entries, sorted by offset, tile the data section of `data_size` bytes exactly, each
// holding dtype size * shape bytes.
void check_layout(const std::string& path, const std::vector<Entry>& entries, uint64_t data_size) {
  uint64_t expected = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    const std::string offsets = make_message("data_offsets [", e.begin, ", ", e.end, "]");
    uint64_t need = dtype_size(e.dtype);
    for (int64_t d : e.shape)
      if (__builtin_mul_overflow(need, static_cast<uint64_t>(d), &need))
        throw_corrupted(path, make_message("tensor '", e.name, "' has an impossibly large shape"));
    if (e.end < e.begin || e.end - e.begin != need)
      throw_corrupted(path,
                      make_message("tensor '", e.name, "' has ", offsets, ", but dtype ", safetensors_dtype(e.dtype),
                                   " and shape ", Shape(e.shape).str(), " need ", need, " bytes"));
    if (e.begin < expected)
      throw_corrupted(path,
                      make_message("tensor '", e.name, "' (", offsets, ") overlaps tensor '", previous->name, "'"));
    if (e.begin > expected)
      throw_corrupted(path, make_message("tensor '", e.name, "' (", offsets, ") leaves a gap of ", e.begin - expected,
                                         " bytes before it"));
    if (e.end > data_size)
      throw_corrupted(path, make_message("tensor '", e.name, "' (", offsets, ") runs past the end of the ", data_size,
                                         "-byte data section: the file is truncated"));
    expected = e.end;
    previous = &e;
  }
  if (expected != data_size)
    throw_corrupted(path, make_message(data_size - expected, " unexpected bytes follow the last tensor"));
}
}  // namespace

namespace {
// The padded JSON header of `tensors` and their contiguous copies, in the order they are packed.
struct Encoded {
  std::string header;
  std::vector<Tensor> contiguous;
  uint64_t data_bytes = 0;
};

Encoded encode(const std::string& path, const std::vector<NamedTensor>& tensors,
               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  header[kMetadataKey] = Json::object();  // first, as the Python package writes it; filled in below
  Json meta = Json::object();
  for (const auto& [key, value] : metadata) {
    LS_CHECK(!key.starts_with(kCrcPrefix), ValueError, "metadata key '", key, "' for ", path,
             " is reserved: keys starting with '", kCrcPrefix, "' hold the tensors' checksums");
    meta[key] = value;
  }
  std::set<std::string> names;
  std::vector<Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    LS_CHECK(name != kMetadataKey, ValueError, "tensor name '", kMetadataKey, "' in ", path,
             " is reserved for the metadata; rename the tensor");
    LS_CHECK(names.insert(name).second, ValueError, "duplicate tensor name '", name, "' in ", path,
             "; every tensor needs its own name");
    LS_CHECK(tensor.defined(), ValueError, "tensor '", name, "' saved to ", path, " is undefined");
    Tensor c = tensor.cpu().contiguous();  // a GPU tensor is saved from a host copy
    const size_t bytes = byte_size(c);
    meta[kCrcPrefix + name] = hex32(crc32c(c.raw_data(), bytes));
    header[name] = {{"dtype", safetensors_dtype(c.dtype())},
                    {"shape", c.shape().dims()},
                    {"data_offsets", Json::array({offset, offset + bytes})}};
    offset += bytes;
    contiguous.push_back(std::move(c));
  }
  header[kMetadataKey] = std::move(meta);

  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    throw ValueError(make_message("cannot save ", path, ": tensor names and metadata must be UTF-8 (", e.what(), ")"));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // so the data section starts 8-byte aligned

  return {std::move(text), std::move(contiguous), offset};
}

// Writes the file's bytes through `write(data, n)`.
template <typename Write>
void emit(const Encoded& e, Write&& write) {
  const uint64_t header_size = e.header.size();  // written as-is: the host is little-endian
  write(&header_size, 8);
  write(e.header.data(), e.header.size());
  for (const Tensor& t : e.contiguous) write(t.raw_data(), byte_size(t));
}
}  // namespace

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const Encoded e = encode(path, tensors, metadata);
  AtomicFile file(path);
  emit(e, [&](const void* data, size_t n) { file.write(data, n); });
  file.commit();
}

std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  const Encoded e = encode("a safetensors buffer", tensors, metadata);
  std::string out;
  out.reserve(8 + e.header.size() + e.data_bytes);
  emit(e, [&](const void* data, size_t n) { out.append(static_cast<const char*>(data), n); });
  return out;
}


const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

namespace {
// Reads exactly n bytes at an offset; false when the input ends first.
using ReadAt = std::function<bool(void* data, size_t n, uint64_t offset)>;

// Validates and decodes safetensors bytes of `file_size` bytes read through `read_at`; sizes in the header are
// checked against file_size before anything is allocated. `path` names the input in messages. With header_only,
// no tensor data is read (nor checked): the result has the metadata and no tensors.
SafetensorsFile parse(const std::string& path, uint64_t file_size, const ReadAt& read_at, bool header_only = false) {
  uint64_t header_size = 0;
  if (file_size < 8 || !read_at(&header_size, 8, 0))
    throw_corrupted(path, make_message("it has ", file_size, " bytes, too few for the 8-byte header length"));
  if (header_size > file_size - 8)
    throw_corrupted(path,
                    make_message("header length ", header_size, " is larger than the file (", file_size, " bytes)"));
  std::string text(header_size, '\0');
  if (!read_at(text.data(), text.size(), 8)) throw_corrupted(path, "the header cannot be read");
  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::exception& e) {
    throw_corrupted(path, make_message("invalid JSON header (", e.what(), ")"));
  }
  if (!header.is_object()) throw_corrupted(path, "the JSON header is not an object");

  SafetensorsFile file;
  std::map<std::string, uint32_t> crcs;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key != kMetadataKey) {
      entries.push_back(parse_entry(path, key, value));
      continue;
    }
    if (!value.is_object()) throw_corrupted(path, "__metadata__ is not a JSON object");
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) throw_corrupted(path, make_message("__metadata__ value of '", k, "' is not a string"));
      const std::string s = v.get<std::string>();
      if (!k.starts_with(kCrcPrefix)) {
        file.metadata[k] = s;
        continue;
      }
      uint32_t crc = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), crc, 16);
      if (s.size() != 8 || ec != std::errc() || end != s.data() + s.size())
        throw_corrupted(path, make_message("__metadata__ entry '", k, "' is '", s, "', not 8 hex digits"));
      crcs[k.substr(kCrcPrefix.size())] = crc;
    }
  }
  // Sorted by (begin, end), so an empty tensor sits before a non-empty one at the same offset.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  const uint64_t data_start = 8 + header_size;
  check_layout(path, entries, file_size - data_start);
  for (const auto& crc : crcs)  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == crc.first; }))
      throw_corrupted(path,
                      make_message("__metadata__ has a CRC32C for tensor '", crc.first, "', which is not in the file"));
  if (header_only) return file;

  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(Shape(e.shape), e.dtype);
    const size_t bytes = byte_size(t);
    if (!read_at(t.raw_data(), bytes, data_start + e.begin))
      throw_corrupted(path, make_message("tensor '", e.name, "' cannot be read: the file is truncated"));
    if (auto it = crcs.find(e.name); it != crcs.end()) {
      const uint32_t computed = crc32c(t.raw_data(), bytes);
      if (computed != it->second)
        throw_corrupted(path, make_message("tensor '", e.name, "' fails its CRC32C check (stored ", hex32(it->second),
                                           ", computed ", hex32(computed), ")"));
    }
    if (e.dtype == DType::bool_) {  // any other byte would be an invalid C++ bool
      auto* p = static_cast<const uint8_t*>(t.raw_data());
      if (std::any_of(p, p + bytes, [](uint8_t b) { return b > 1; }))
        throw_corrupted(path, make_message("BOOL tensor '", e.name, "' holds bytes other than 0 and 1"));
    }
    file.tensors.push_back({e.name, std::move(t)});
  }
  return file;
}
}  // namespace

namespace {
SafetensorsFile load(const std::string& path, bool header_only) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    int err = errno;
    throw NotFoundError(make_message("cannot open checkpoint file ", path, ": ", std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw NotFoundError(make_message("cannot open checkpoint file ", path, ": not a regular file"));
  return parse(
      path, static_cast<uint64_t>(st.st_size),
      [&](void* data, size_t n, uint64_t offset) { return read_all(fd.get(), data, n, offset); }, header_only);
}
}  // namespace

SafetensorsFile load_safetensors(const std::string& path) { return load(path, false); }

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  return load(path, true).metadata;
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& name) {
  return parse(name, bytes.size(), [&](void* data, size_t n, uint64_t offset) {
    if (offset > bytes.size() || n > bytes.size() - offset) return false;
    std::memcpy(data, bytes.data() + offset, n);
    return true;
  });
}

}  // namespace lockstep::train
