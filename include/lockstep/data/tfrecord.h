// TFRecord files (tf.io.TFRecordWriter / tf.data.TFRecordDataset): a sequence of records, each framed as
//   uint64 length | uint32 masked CRC32C of length | length bytes | uint32 masked CRC32C of the bytes
// (little-endian), the whole file optionally gzipped. TensorBoard's event files use the same framing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::data {

// The framed bytes of one record, as they appear in an uncompressed file.
std::string frame_tfrecord(std::string_view record);

struct TFRecordOptions {
  std::string compression_type = "";  // "" or "GZIP", as TF spells it
};

// Appends records to a new file (TF's tf.io.TFRecordWriter). Records reach the file as they are written (through
// zlib's buffer for GZIP); flush() pushes them to the operating system, so a reader sees every record written
// before it. Errors name the file and the system's reason.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path, TFRecordOptions options = {});
  ~TFRecordWriter();  // closes; errors are reported by close(), not here
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record);
  void flush();
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* file_ = nullptr;  // a gzFile: zlib writes both the plain and the gzipped form
};

}  // namespace lockstep::data
