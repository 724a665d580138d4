// IDX, gzip, .npy and .npz readers: zlib does the gunzip, libzip reads the .npz archive and its members.
// Every length read from a file is checked against the bytes present before it is used or allocated.
#include "lockstep/data/readers.h"

#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <memory>

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

// A libzip archive opened read-only; discarding it writes nothing back.
struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Zip = std::unique_ptr<zip_t, ZipDiscard>;

// The archive at `path`, with libzip's consistency check (each local header must agree with the central
// directory). A file that cannot be opened is NotFoundError; one that libzip cannot read is corrupt.
Zip open_zip(const std::string& path) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_file_create(path.c_str(), 0, -1, &error);
  zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
  if (archive) {
    zip_error_fini(&error);
    return Zip(archive);
  }
  if (source) zip_source_free(source);
  const int code = zip_error_code_zip(&error);
  const std::string reason = zip_error_strerror(&error);
  zip_error_fini(&error);
  if (code == ZIP_ER_OPEN || code == ZIP_ER_NOENT)
    throw NotFoundError(make_message(path, ": cannot open (", reason, "); check the path"));
  if (code == ZIP_ER_NOZIP)
    corrupt(path, make_message("not a zip archive, or its central directory is damaged (libzip: ", reason, ")"));
  if (code == ZIP_ER_INCONS)
    corrupt(path, make_message("a member's local header disagrees with the central directory (libzip: ", reason, ")"));
  corrupt(path, make_message("not a readable zip archive (libzip: ", reason, ")"));
}

// Deflate emits at least 2 bits per 258 bytes, so no member inflates to more than 1032 times its size.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The inflated, CRC-checked bytes of member `st`. Its size is checked before anything is allocated, so a header
// claiming terabytes is refused, not believed: libzip has already refused compressed data running past the
// central directory, and kMaxDeflateRatio bounds what that can inflate to.
std::vector<uint8_t> read_member(zip_t* archive, const std::string& path, const std::string& name,
                                 const zip_stat_t& st) {
  const zip_uint64_t needed = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((st.valid & needed) != needed)
    corrupt(path, make_message("member ", name, " has no sizes in the central directory"));
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
    corrupt(path, make_message("member ", name, " is encrypted; .npz members never are"));
  const uint64_t size = st.size, compressed = st.comp_size;
  if (st.comp_method == ZIP_CM_STORE) {
    if (compressed != size)
      corrupt(path, make_message("stored member ", name, " has ", compressed, " bytes, expected ", size));
  } else if (st.comp_method == ZIP_CM_DEFLATE) {
    if (size / kMaxDeflateRatio > compressed)
      corrupt(path, make_message("deflated member ", name, " claims ", size, " bytes from ", compressed,
                                 " compressed bytes, more than deflate can encode"));
  } else {
    corrupt(path, make_message("member ", name, " uses zip compression method ", st.comp_method,
                               "; only stored (0) and deflate (8) are supported"));
  }

  std::unique_ptr<zip_file_t, ZipFileClose> file(zip_fopen_index(archive, st.index, 0));
  if (!file) corrupt(path, make_message("cannot open member ", name, " (libzip: ", zip_strerror(archive), ")"));
  std::vector<uint8_t> out(size);
  uint64_t got = 0;
  uint8_t past_end = 0;
  for (;;) {
    // Reading on past the declared size is what makes libzip check the CRC and the true length.
    const bool full = got == size;
    const zip_int64_t n = zip_fread(file.get(), full ? &past_end : out.data() + got, full ? 1 : size - got);
    if (n < 0) {
      zip_error_t* error = zip_file_get_error(file.get());
      if (zip_error_code_zip(error) == ZIP_ER_CRC)
        corrupt(path,
                make_message("CRC mismatch in member ", name, " (the directory says ", hex32(uint32_t(st.crc)), ")"));
      corrupt(path, make_message(st.comp_method == ZIP_CM_DEFLATE ? "deflated member " : "member ", name,
                                 " cannot be read (libzip: ", zip_error_strerror(error), ")"));
    }
    if (n == 0 && !full) corrupt(path, make_message("member ", name, " ends after ", got, " of its ", size, " bytes"));
    if (n == 0) return out;
    if (full) corrupt(path, make_message("member ", name, " holds more than the ", size, " bytes its header declares"));
    got += uint64_t(n);
  }
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw NotFoundError(make_message(path, ": cannot open (", std::strerror(errno), "); check the path"));
  gzbuffer(f, 1 << 18);
  std::vector<uint8_t> out;
  constexpr uint64_t kChunk = 1 << 22;
  for (;;) {
    const size_t have = out.size();
    const uint64_t want = std::min(kChunk, max_bytes - have);
    out.resize(have + want);
    int got = want ? gzread(f, out.data() + have, static_cast<unsigned>(want)) : 0;
    out.resize(have + static_cast<size_t>(std::max(got, 0)));
    if (got < static_cast<int>(want) || out.size() == max_bytes) break;
  }
  int err = Z_OK;
  std::string message = gzerror(f, &err);
  int close_err = gzclose(f);
  if (err != Z_OK) corrupt(path, "gzip stream is corrupt (" + message + ")");
  if (close_err != Z_OK) corrupt(path, "gzip stream is truncated (unexpected end of file)");
  return out;
}

namespace {
// The size an IDX file's header promises (header included, saturating), read from its first bytes; what a
// short header or a bad magic number promises does not matter, as reading the file then reports them.
uint64_t idx_promised_size(const std::string& path, int expected_rank) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return 0;
  uint8_t head[4 + 4 * 255];
  const int got = std::max(gzread(f, head, sizeof head), 0);
  gzclose(f);
  if (got < 4 || head[0] != 0 || head[1] != 0 || head[2] != 0x08 || (expected_rank >= 0 && head[3] != expected_rank))
    return 4;
  const uint64_t rank = head[3], header = 4 + 4 * rank;
  if (static_cast<uint64_t>(got) < header) return header;
  uint64_t size = 1;
  for (uint64_t i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(size, uint64_t{big_endian32(head + 4 + 4 * i)}, &size)) return UINT64_MAX - 1;
  return size > UINT64_MAX - 1 - header ? UINT64_MAX - 1 : header + size;
}
}  // namespace

namespace {
// An array with a 0 dimension (an empty data set) holds no bytes, so the size check passes it whatever its other
// dimensions; those must still be sane, or the shape's strides would overflow.
void check_empty_shape(const std::vector<int64_t>& dims, const std::string& name) {
  if (std::find(dims.begin(), dims.end(), 0) == dims.end()) return;
  constexpr uint64_t kMaxElements = uint64_t{1} << 40;
  uint64_t product = 1;
  for (int64_t d : dims) {
    if (d == 0) continue;
    if (static_cast<uint64_t>(d) > kMaxElements / product)
      corrupt(name, make_message("shape ", Shape(dims).str(), " is empty but its other dimensions are too large"));
    product *= static_cast<uint64_t>(d);
  }
}
}  // namespace

Tensor read_idx(const std::string& path, int expected_rank) {
  // A promise that no file of this size can keep, even deflated, is refused before anything is read; and
  // nothing is read past what the header promises (but one byte, to tell trailing data), so a small gzip
  // file that inflates to gigabytes behind a modest header is refused after those bytes, not held whole.
  const uint64_t promised = idx_promised_size(path, expected_rank);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && promised / kMaxDeflateRatio > static_cast<uint64_t>(st.st_size))
    corrupt(path, make_message("header promises ", promised, " bytes, more than its ", st.st_size,
                               " bytes could hold even compressed (truncated)"));
  std::vector<uint8_t> bytes = read_file(path, promised + 1);
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
  check_empty_shape(dims, path);
  const uint64_t header = 4 + 4 * uint64_t(rank), present = bytes.size() - header;
  if (present != expected)
    corrupt(path, make_message("header promises ", Shape(dims).str(), " = ",
                               expected > bytes.size() ? std::string("more") : std::to_string(expected),
                               " bytes of data but the file holds ",
                               present < expected ? std::to_string(present) + " (truncated)"
                                                  : std::string("more (trailing bytes)")));
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
    // Saturates at data.size() + 1 without wrapping around: (4, 2**62) must not come out as 0 bytes.
    const uint64_t limit = data.size() + 1;
    if (d == 0) expected = 0;  // an empty array; check_empty_shape judges the other dimensions
    else expected = expected > limit / static_cast<uint64_t>(d) ? limit : expected * static_cast<uint64_t>(d);
  }
  check_empty_shape(dims, name);
  const uint64_t present = data.size() - std::min<uint64_t>(data.size(), header_start + header_len);
  if (present != expected)
    corrupt(name, make_message("shape ", Shape(dims).str(), " needs ", expected > data.size() ? std::string("more") : std::to_string(expected),
                               " bytes of data but ", present, " follow the header"));
  return from_data(data.data() + header_start + header_len, Shape(std::move(dims)), DType::uint8);
}

std::map<std::string, Tensor> read_npz(const std::string& path) {
  Zip archive = open_zip(path);
  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  std::map<std::string, Tensor> arrays;
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive.get(), zip_uint64_t(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      corrupt(path, make_message("cannot read central directory entry ", i, " (", zip_strerror(archive.get()), ")"));
    const std::string name = st.name;
    if (name.size() <= 4 || !name.ends_with(".npy")) continue;  // np.savez writes only .npy members
    const std::vector<uint8_t> npy = read_member(archive.get(), path, name, st);
    arrays[name.substr(0, name.size() - 4)] = parse_npy(npy, path + ":" + name);
  }
  return arrays;
}

}  // namespace lockstep::data
