// TFRecordWriter: zlib's gzFile writes the plain form (mode "wT") and the gzipped one alike.
#include <cerrno>
#include <cstring>

#include <zlib.h>

#include "lockstep/core/crc32c.h"
#include "lockstep/core/error.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::data {

namespace {
void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}
gzFile gz(void* f) { return static_cast<gzFile>(f); }
}  // namespace

std::string frame_tfrecord(std::string_view record) {
  std::string out;
  out.reserve(record.size() + 16);
  put_le(out, record.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(record);
  put_le(out, masked_crc32c(record.data(), record.size()), 4);
  return out;
}

TFRecordWriter::TFRecordWriter(std::string path, TFRecordOptions options) : path_(std::move(path)) {
  LS_CHECK(options.compression_type.empty() || options.compression_type == "GZIP", InvalidArgumentError,
           "TFRecordWriter: compression_type \"", options.compression_type, "\" is not supported; use \"\" or \"GZIP\"");
  file_ = gzopen(path_.c_str(), options.compression_type.empty() ? "wbT" : "wb6");
  if (!file_) {
    const int err = errno;
    if (err == ENOENT) throw NotFoundError("cannot create TFRecord file " + path_ + ": its directory does not exist");
    throw Error("cannot create TFRecord file " + path_ + ": " + std::strerror(err));
  }
}

TFRecordWriter::~TFRecordWriter() {
  if (file_) gzclose(gz(file_));
}

void TFRecordWriter::write(std::string_view record) {
  LS_CHECK(file_, ValueError, "TFRecordWriter: ", path_, " is closed");
  const std::string framed = frame_tfrecord(record);
  if (gzwrite(gz(file_), framed.data(), static_cast<unsigned>(framed.size())) != static_cast<int>(framed.size())) {
    int err = 0;
    throw Error("cannot write TFRecord file " + path_ + ": " + gzerror(gz(file_), &err));
  }
}

void TFRecordWriter::flush() {
  LS_CHECK(file_, ValueError, "TFRecordWriter: ", path_, " is closed");
  if (gzflush(gz(file_), Z_SYNC_FLUSH) != Z_OK) {
    int err = 0;
    throw Error("cannot flush TFRecord file " + path_ + ": " + gzerror(gz(file_), &err));
  }
}

void TFRecordWriter::close() {
  if (!file_) return;
  const int rc = gzclose(gz(file_));
  file_ = nullptr;
  LS_CHECK(rc == Z_OK, Error, "cannot close TFRecord file ", path_, ": ", rc == Z_ERRNO ? std::strerror(errno) : "zlib error");
}

}  // namespace lockstep::data
