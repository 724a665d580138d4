// TFRecordDataset: a file reader (file_reader.cc) that reads one record at a time (12-byte header, data, 4-byte
// footer) and checks both masked CRCs; and list_files, a sorted glob.
#include <glob.h>

#include <algorithm>
#include <iomanip>
#include <memory>
#include <sstream>

#include "input_file-impl.h"
#include "lockstep/core/crc32c.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::data {

namespace {

constexpr const char* kReader = "TFRecordDataset";

uint64_t little_endian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

std::string hex32(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return os.str();
}

[[noreturn]] void damaged(const detail::InputFile& in, int64_t index, uint64_t at, const std::string& what) {
  throw DataLossError(make_message(kReader, ": corrupted record #", index, " at byte offset ", at, " of ", in.path(),
                                   in.gzipped() ? " (uncompressed)" : "", ": ", what,
                                   "; the file is damaged: write it again, or leave it out of the file list"));
}

// The next record of `in`, `index` records into it, as a string scalar; nullopt at its end.
std::optional<Element> read_record(detail::InputFile& in, int64_t index) {
  const uint64_t at = in.offset();
  uint8_t header[12];
  const size_t got = in.read(header, sizeof header);
  if (got == 0) return std::nullopt;
  if (got < sizeof header)
    damaged(in, index, at, make_message("truncated: the file ends ", got, " bytes into the 12-byte length header"));
  const uint32_t stored_length_crc = static_cast<uint32_t>(little_endian(header + 8, 4));
  const uint32_t length_crc = masked_crc32c(header, 8);
  if (stored_length_crc != length_crc)
    damaged(
        in, index, at,
        "length CRC mismatch (stored " + hex32(stored_length_crc) + ", computed " + hex32(length_crc) + ")" +
            (at == 0 && in.starts_like_gzip() ? "; it starts like a gzip file: pass compression_type \"GZIP\"" : ""));
  const uint64_t length = little_endian(header, 8);
  // Read in bounded chunks, so that a length that runs past the end of the file allocates no more than is there.
  std::string record;
  while (record.size() < length) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(length - record.size(), 1 << 20));
    const size_t old = record.size();
    record.resize(old + chunk);
    const size_t n = in.read(record.data() + old, chunk);
    if (n < chunk)
      damaged(
          in, index, at,
          make_message("truncated: the file ends ", old + n, " bytes into the record's ", length, " bytes of data"));
  }
  uint8_t footer[4];
  const size_t n = in.read(footer, sizeof footer);
  if (n < sizeof footer)
    damaged(in, index, at, make_message("truncated: the file ends ", n, " bytes into the 4-byte data CRC"));
  const uint32_t stored_crc = static_cast<uint32_t>(little_endian(footer, 4));
  const uint32_t crc = masked_crc32c(record.data(), record.size());
  if (stored_crc != crc)
    damaged(in, index, at, "data CRC mismatch (stored " + hex32(stored_crc) + ", computed " + hex32(crc) + ")");
  std::vector<std::string> values;  // not StringTensor::scalar: its initializer_list would copy the bytes
  values.push_back(std::move(record));
  return Element(StringTensor(Shape(), std::move(values)));
}

}  // namespace

Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordOptions options) {
  return detail::file_reader(std::move(filenames),
                             {kReader, "record", std::move(options.compression_type), read_record});
}

std::vector<std::string> list_files(const std::string& file_pattern) {
  LS_CHECK(!file_pattern.empty(), InvalidArgumentError,
           "list_files: the file pattern is empty; pass e.g. \"data/train-*.tfrecord\"");
  std::vector<std::string> out;
  glob_t g{};
  const int rc = ::glob(file_pattern.c_str(), GLOB_ERR, nullptr, &g);
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  LS_CHECK(rc == 0, NotFoundError, "list_files: no files match the pattern \"", file_pattern, "\"",
           rc == GLOB_NOMATCH ? "; check the directory and the wildcards" : " (a directory could not be read)");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lockstep::data
