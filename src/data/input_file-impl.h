// Private to src/data: the sequential file reader of the file-based sources (TFRecordDataset, the CSV reader) and
// the node interface through which auto-shard FILE gives each worker its own files.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/data/dataset_node.h"

namespace lockstep::data::detail {

// One file read front to back through a bounded buffer, plain (stdio) or gzipped (zlib; compression_type "" or
// "GZIP"), with the number of (uncompressed) bytes consumed so far as its position. Opening a missing file is a
// NotFoundError; a gzip stream that is damaged or cut short is a DataLossError naming the file and the offset.
class InputFile {
 public:
  InputFile(std::string path, const std::string& compression_type, const char* reader);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Up to n bytes into dst; fewer only at the end of the file.
  size_t read(void* dst, size_t n);
  // The next byte, or -1 at the end.
  int get();
  uint64_t offset() const { return offset_; }
  // Continues at `offset` (for GZIP zlib decompresses up to it again). DataLossError when the file is shorter.
  void seek(uint64_t offset);
  const std::string& path() const { return path_; }
  bool gzipped() const { return gzip_; }
  // A plain file whose first bytes are gzip's magic number: what a reader names when the data makes no sense.
  bool starts_like_gzip() const { return starts_like_gzip_; }

 private:
  [[noreturn]] void fail_stream();
  std::string path_;
  const char* reader_;
  bool gzip_;
  bool starts_like_gzip_ = false;
  std::FILE* plain_ = nullptr;
  void* file_ = nullptr;  // gzFile, for GZIP
  uint64_t offset_ = 0;
};

// A file list for a reader node's str(), which saved states repeat: long lists are abridged.
std::string describe_files(const std::vector<std::string>& files);

// Checks compression_type ("" or "GZIP") for `reader`'s error message.
void check_compression_type(const std::string& compression_type, const char* reader);

// What a source that reads its files front to back, one item at a time (TFRecordDataset, TextLineDataset), gives
// file_reader(): the rest (the node, auto-shard FILE, the iterator and its saved state) is shared.
struct FileReader {
  const char* name;              // "TFRecordDataset": the node's op and the errors' subject
  const char* unit;              // "record": the saved state's key for the items read from the current file
  std::string compression_type;  // "" or "GZIP"
  // The next item of `in`, `index` items into it, or nullopt at its end; a damaged file throws DataLossError.
  std::function<std::optional<Element>(InputFile& in, int64_t index)> read_one;
};

// The source node of `reader` over `files` (checked: known compression, no empty name). Its iterator's state is
// {"file", reader.unit, "offset"}: the file being read, the items read from it and the byte offset after them.
Dataset file_reader(std::vector<std::string> files, FileReader reader);

}  // namespace lockstep::data::detail
