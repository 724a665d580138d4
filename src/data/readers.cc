// IDX, gzip, .npy and .npz readers (zlib does the gunzip and the raw inflate of deflated zip members).
// Every length read from a file is checked against the bytes present before it is used.
#include "lockstep/data/readers.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>

#include "lockstep/tensor/ops.h"

namespace lockstep::data {

namespace {

// A DataLossError about `path` that says how to recover.
[[noreturn]] void corrupt(const std::string& path, const std::string& reason) {
  throw DataLossError(make_message(path, ": ", reason,
                                   "; the file is corrupt or truncated: delete it and download it again (or reinstall "
                                   "the package that provides it)"));
}

std::string hex32(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return os.str();
}

uint32_t big_endian32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t little_endian(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint64_t little_endian64(const uint8_t* p) { return uint64_t(little_endian(p + 4, 4)) << 32 | little_endian(p, 4); }

// A bounds-checked view of a file's bytes: at(offset, n) fails as truncation when n bytes are not there.
struct Bytes {
  std::span<const uint8_t> data;
  const std::string& path;
  const uint8_t* at(uint64_t offset, uint64_t n, const char* what) const {
    if (offset > data.size() || n > data.size() - offset)
      corrupt(path, make_message(what, " at byte ", offset, " runs past the end of the ", data.size(), "-byte file"));
    return data.data() + offset;
  }
};

// The bytes of an uncompressed file.
std::vector<uint8_t> read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError(make_message(path, ": cannot open (", std::strerror(errno), "); check the path"));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A zip member's data, inflated when deflated, CRC-checked.
std::vector<uint8_t> unzip_member(const std::string& path, const std::string& name, int method, const uint8_t* data,
                                  uint64_t compressed, uint64_t size, uint32_t crc) {
  std::vector<uint8_t> out(size);
  if (method == 0) {
    if (compressed != size) corrupt(path, make_message("stored member ", name, " has ", compressed, " bytes, expected ", size));
    std::memcpy(out.data(), data, size);
  } else if (method == 8) {
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw RuntimeError("zlib: inflateInit2 failed");
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(compressed);
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(size);
    int rc = inflate(&zs, Z_FINISH);
    uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || produced != size)
      corrupt(path, make_message("deflated member ", name, " does not inflate to its ", size, " bytes (",
                                 zs.msg ? zs.msg : "stream ends early", ")"));
  } else {
    corrupt(path, make_message("member ", name, " uses zip compression method ", method, "; only stored (0) and deflate (8) are supported"));
  }
  uint32_t actual = static_cast<uint32_t>(crc32(0L, out.data(), static_cast<uInt>(out.size())));
  if (actual != crc) corrupt(path, make_message("CRC mismatch in member ", name, " (stored ", hex32(crc), ", computed ", hex32(actual), ")"));
  return out;
}

// The text after `'key':` in a .npy header dictionary, up to the next ',' or '}' outside brackets.
std::string npy_field(const std::string& header, const std::string& key, const std::string& name) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) corrupt(name, make_message(".npy header has no '", key, "': ", header));
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) corrupt(name, ".npy header is malformed: " + header);
  size_t end = colon + 1;
  for (int depth = 0; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string value = header.substr(colon + 1, end - colon - 1);
  value.erase(0, value.find_first_not_of(" "));
  value.erase(value.find_last_not_of(" ") + 1);
  return value;
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw NotFoundError(make_message(path, ": cannot open (", std::strerror(errno), "); check the path"));
  gzbuffer(f, 1 << 18);
  std::vector<uint8_t> out;
  constexpr size_t kChunk = 1 << 22;
  for (;;) {
    size_t have = out.size();
    out.resize(have + kChunk);
    int got = gzread(f, out.data() + have, static_cast<unsigned>(kChunk));
    out.resize(have + static_cast<size_t>(std::max(got, 0)));
    if (got < static_cast<int>(kChunk)) break;
  }
  int err = Z_OK;
  std::string message = gzerror(f, &err);
  int close_err = gzclose(f);
  if (err != Z_OK) corrupt(path, "gzip stream is corrupt (" + message + ")");
  if (close_err != Z_OK) corrupt(path, "gzip stream is truncated (unexpected end of file)");
  return out;
}

Tensor read_idx(const std::string& path, int expected_rank) {
  std::vector<uint8_t> bytes = read_file(path);
  Bytes file{bytes, path};
  uint32_t magic = big_endian32(file.at(0, 4, "the IDX magic number"));
  int rank = magic & 0xff;
  bool ok = (magic >> 8) == 0x08 && rank >= 1 && (expected_rank < 0 || rank == expected_rank);
  if (!ok)
    corrupt(path, make_message("bad magic number ", hex32(magic), ", expected ",
                               expected_rank >= 0 ? hex32(0x800u + uint32_t(expected_rank)) : std::string("0x0000080N"),
                               " (an IDX file of unsigned bytes", expected_rank >= 0 ? make_message(" with ", expected_rank, " dimensions") : "", ")"));
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  uint64_t expected = 1;
  for (int i = 0; i < rank; ++i) {
    dims[static_cast<size_t>(i)] = big_endian32(file.at(4 + 4 * uint64_t(i), 4, "an IDX dimension"));
    expected *= static_cast<uint64_t>(dims[static_cast<size_t>(i)]);
    if (expected > bytes.size()) expected = bytes.size() + 1;  // already too large; avoid overflow
  }
  const uint64_t header = 4 + 4 * uint64_t(rank), present = bytes.size() - header;
  if (present != expected)
    corrupt(path, make_message("header promises ", Shape(dims).str(), " = ", expected > bytes.size() ? std::string("more") : std::to_string(expected),
                               " bytes of data but the file holds ", present, present < expected ? " (truncated)" : " (trailing bytes)"));
  return from_data(bytes.data() + header, Shape(std::move(dims)), DType::uint8);
}

Tensor parse_npy(std::span<const uint8_t> data, const std::string& name) {
  Bytes file{data, name};
  const uint8_t* magic = file.at(0, 8, "the .npy magic string");
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) corrupt(name, "bad magic string (not a .npy array)");
  const int major = magic[6];
  if (major < 1 || major > 3) corrupt(name, make_message(".npy format version ", major, " is not 1, 2 or 3"));
  const int len_bytes = major == 1 ? 2 : 4;
  const uint64_t header_len = little_endian(file.at(8, uint64_t(len_bytes), "the .npy header length"), len_bytes);
  const uint64_t header_start = 8 + uint64_t(len_bytes);
  const auto* text = reinterpret_cast<const char*>(file.at(header_start, header_len, "the .npy header"));
  const std::string header(text, header_len);

  const std::string descr = npy_field(header, "descr", name);
  if (descr != "'|u1'" && descr != "'<u1'" && descr != "'u1'")
    corrupt(name, "holds dtype " + descr + "; only uint8 arrays ('|u1') are supported");
  if (npy_field(header, "fortran_order", name) != "False") corrupt(name, "is stored in Fortran order; only C order is supported");
  std::string shape = npy_field(header, "shape", name);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') corrupt(name, "has a malformed shape " + shape);
  std::vector<int64_t> dims;
  uint64_t expected = 1;
  std::istringstream dims_text(shape.substr(1, shape.size() - 2));
  for (std::string part; std::getline(dims_text, part, ',');) {
    if (part.find_first_not_of(" L") == std::string::npos) continue;  // "(5,)" and Python 2's 5L
    char* end = nullptr;
    long long d = std::strtoll(part.c_str(), &end, 10);
    if (d < 0 || end == part.c_str()) corrupt(name, "has a malformed shape " + shape);
    dims.push_back(d);
    expected = std::min<uint64_t>(expected * static_cast<uint64_t>(d), data.size() + 1);
  }
  const uint64_t present = data.size() - std::min<uint64_t>(data.size(), header_start + header_len);
  if (present != expected)
    corrupt(name, make_message("shape ", Shape(dims).str(), " needs ", expected > data.size() ? std::string("more") : std::to_string(expected),
                               " bytes of data but ", present, " follow the header"));
  return from_data(data.data() + header_start + header_len, Shape(std::move(dims)), DType::uint8);
}

std::map<std::string, Tensor> read_npz(const std::string& path) {
  const std::vector<uint8_t> bytes = read_plain(path);
  Bytes file{bytes, path};
  // The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB, at the end.
  int64_t eocd = -1;
  for (int64_t at = int64_t(bytes.size()) - 22; at >= 0 && at >= int64_t(bytes.size()) - 22 - 65535; --at) {
    if (little_endian(&bytes[size_t(at)], 4) == 0x06054b50) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) corrupt(path, "not a zip archive (no end-of-central-directory record)");
  const uint8_t* end_record = file.at(uint64_t(eocd), 22, "the end-of-central-directory record");
  const uint32_t entries = little_endian(end_record + 10, 2);
  uint64_t offset = little_endian(end_record + 16, 4);

  std::map<std::string, Tensor> arrays;
  for (uint32_t e = 0; e < entries; ++e) {
    const uint8_t* entry = file.at(offset, 46, "a central directory entry");
    if (little_endian(entry, 4) != 0x02014b50) corrupt(path, make_message("bad central directory signature at byte ", offset));
    const int method = int(little_endian(entry + 10, 2));
    const uint32_t crc = little_endian(entry + 16, 4);
    uint64_t compressed = little_endian(entry + 20, 4), size = little_endian(entry + 24, 4);
    const uint32_t name_len = little_endian(entry + 28, 2), extra_len = little_endian(entry + 30, 2),
                   comment_len = little_endian(entry + 32, 2);
    uint64_t local = little_endian(entry + 42, 4);
    const std::string name(reinterpret_cast<const char*>(file.at(offset + 46, name_len, "a member name")), name_len);
    // Zip64 extra field: 8-byte values for the fields saturated at 0xffffffff, in this order.
    const uint8_t* extra = file.at(offset + 46 + name_len, extra_len, "a member's extra field");
    for (uint32_t at = 0; at + 4 <= extra_len;) {
      const uint32_t id = little_endian(extra + at, 2), len = little_endian(extra + at + 2, 2);
      if (at + 4 + len > extra_len) break;
      if (id == 1) {
        const uint8_t* v = extra + at + 4;
        for (uint64_t* field : {&size, &compressed, &local}) {
          if (*field == 0xffffffffu && v + 8 <= extra + at + 4 + len) *field = little_endian64(v), v += 8;
        }
      }
      at += 4 + len;
    }
    offset += 46 + uint64_t(name_len) + extra_len + comment_len;

    const uint8_t* header = file.at(local, 30, "a local file header");
    if (little_endian(header, 4) != 0x04034b50) corrupt(path, make_message("bad local header signature for member ", name));
    const uint64_t data_at = local + 30 + little_endian(header + 26, 2) + little_endian(header + 28, 2);
    const uint8_t* data = file.at(data_at, compressed, ("the data of member " + name).c_str());
    std::vector<uint8_t> npy = unzip_member(path, name, method, data, compressed, size, crc);
    if (name.size() > 4 && name.ends_with(".npy"))
      arrays[name.substr(0, name.size() - 4)] = parse_npy(npy, path + ":" + name);
  }
  return arrays;
}

}  // namespace lockstep::data
