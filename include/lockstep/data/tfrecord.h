// TFRecord files (tf.io.TFRecordWriter / tf.data.TFRecordDataset): a sequence of records, each framed as
//   uint64 length | uint32 masked CRC32C of length | length bytes | uint32 masked CRC32C of the bytes
// (little-endian), the whole file optionally gzipped. TensorBoard's event files use the same framing.
// TFRecordDataset reads them back lazily, checking both CRCs of every record; list_files finds them by pattern.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data {

// The framed bytes of one record, as they appear in an uncompressed file.
std::string frame_tfrecord(std::string_view record);

struct TFRecordOptions {
  std::string compression_type = "";  // "" or "GZIP", as TF spells it
};

// A dataset of the records of `filenames`, read in order, one file after the other, through a bounded buffer
// (tf.data.TFRecordDataset). Each element is, as in TF, a string scalar: a StringTensor leaf of shape [] holding the
// record's bytes (parse it with parse_example_fn or parse_single_example, example.h).
// A record whose length or data fails its masked CRC32C, or that the file cuts short, is a DataLossError naming
// the file and the byte offset of the record (in the uncompressed stream for GZIP); a missing file is a
// NotFoundError. Cardinality is unknown, as in TF. The iterator's state is (file, record, byte offset), so a
// restored iterator resumes mid-file. Under auto-shard FILE (and AUTO, given at least as many files as workers)
// each worker reads every num_workers-th file.
Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordOptions options = {});

// The files matching a glob pattern (*, ?, [...]), sorted (tf.io.gfile.glob; TF's Dataset.list_files would
// also shuffle them, which lockstep leaves to the caller). No match is a NotFoundError naming the pattern.
std::vector<std::string> list_files(const std::string& file_pattern);

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
