// TFRecordDataset: a source node over a list of files whose iterator reads one record at a time (12-byte header,
// data, 4-byte footer) and checks both masked CRCs; and list_files, a sorted glob.
#include <glob.h>

#include <algorithm>
#include <iomanip>
#include <memory>
#include <sstream>

#include "input_file-impl.h"
#include "lockstep/core/crc32c.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::data {

using nlohmann::json;

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

class TFRecordNode final : public DatasetNode {
 public:
  TFRecordNode(std::vector<std::string> files, TFRecordOptions options)
      : DatasetNode(kReader,
                    {{"filenames", detail::describe_files(files)}, {"compression_type", options.compression_type}}, {}),
        files_(std::move(files)),
        options_(std::move(options)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, kReader, " takes no input dataset, got ", inputs.size());
    return std::make_shared<TFRecordNode>(files_, options_);
  }
  std::vector<std::string> files() const override { return files_; }
  NodePtr with_files(std::vector<std::string> files) const override {
    return std::make_shared<TFRecordNode>(std::move(files), options_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::vector<std::string> files_;
  TFRecordOptions options_;
};

// State: the file being read, the number of records already read from it, and the byte offset after them.
class TFRecordIterator final : public ItemIterator {
 public:
  explicit TFRecordIterator(const TFRecordNode& node) : node_(node) {}

  std::optional<Item> next() override {
    while (file_ < node_.files_.size()) {
      if (!in_) {
        in_ = std::make_unique<detail::InputFile>(node_.files_[file_], node_.options_.compression_type, kReader);
        if (offset_ > 0) in_->seek(offset_);
      }
      if (std::optional<std::string> record = read_record()) {
        ++record_;
        offset_ = in_->offset();
        std::vector<std::string> values;  // not StringTensor::scalar: its initializer_list would copy the bytes
        values.push_back(std::move(*record));
        return Item{-1, Element(StringTensor(Shape(), std::move(values)))};
      }
      in_.reset();
      ++file_;
      record_ = 0;
      offset_ = 0;
    }
    return std::nullopt;
  }

  json save_state() const override { return {{"file", file_}, {"record", record_}, {"offset", offset_}}; }

  void restore_state(const json& state) override {
    const int64_t file = state.at("file").get<int64_t>(), record = state.at("record").get<int64_t>(),
                  offset = state.at("offset").get<int64_t>();
    LS_CHECK(file >= 0 && file <= static_cast<int64_t>(node_.files_.size()) && record >= 0 && offset >= 0, ValueError,
             "restore_state: the saved ", kReader, " position (file ", file, ", record ", record, ", offset ", offset,
             ") does not fit its ", node_.files_.size(), " files; restore into an iterator of the same pipeline");
    in_.reset();  // reopened (and sought) by the next next()
    file_ = static_cast<size_t>(file);
    record_ = record;
    offset_ = static_cast<uint64_t>(offset);
  }

 private:
  [[noreturn]] void damaged(uint64_t at, const std::string& what) const {
    throw DataLossError(make_message(kReader, ": corrupted record #", record_, " at byte offset ", at, " of ",
                                     in_->path(), node_.options_.compression_type.empty() ? "" : " (uncompressed)",
                                     ": ", what,
                                     "; the file is damaged: write it again, or leave it out of the file list"));
  }

  // The next record of the open file, or nullopt at its end.
  std::optional<std::string> read_record() {
    const uint64_t at = in_->offset();
    uint8_t header[12];
    const size_t got = in_->read(header, sizeof header);
    if (got == 0) return std::nullopt;
    if (got < sizeof header)
      damaged(at, make_message("truncated: the file ends ", got, " bytes into the 12-byte length header"));
    const uint32_t stored_length_crc = static_cast<uint32_t>(little_endian(header + 8, 4));
    const uint32_t length_crc = masked_crc32c(header, 8);
    if (stored_length_crc != length_crc)
      damaged(at,
              "length CRC mismatch (stored " + hex32(stored_length_crc) + ", computed " + hex32(length_crc) + ")" +
                  (at == 0 && in_->starts_like_gzip() ? "; it starts like a gzip file: pass compression_type \"GZIP\""
                                                      : ""));
    const uint64_t length = little_endian(header, 8);
    // Read in bounded chunks, so that a length that runs past the end of the file allocates no more than is there.
    std::string record;
    while (record.size() < length) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(length - record.size(), 1 << 20));
      const size_t old = record.size();
      record.resize(old + chunk);
      const size_t n = in_->read(record.data() + old, chunk);
      if (n < chunk)
        damaged(at, make_message("truncated: the file ends ", old + n, " bytes into the record's ", length,
                                 " bytes of data"));
    }
    uint8_t footer[4];
    const size_t n = in_->read(footer, sizeof footer);
    if (n < sizeof footer) damaged(at, make_message("truncated: the file ends ", n, " bytes into the 4-byte data CRC"));
    const uint32_t stored_crc = static_cast<uint32_t>(little_endian(footer, 4));
    const uint32_t crc = masked_crc32c(record.data(), record.size());
    if (stored_crc != crc)
      damaged(at, "data CRC mismatch (stored " + hex32(stored_crc) + ", computed " + hex32(crc) + ")");
    return record;
  }

  const TFRecordNode& node_;
  std::unique_ptr<detail::InputFile> in_;
  size_t file_ = 0;
  int64_t record_ = 0;
  uint64_t offset_ = 0;
};

std::unique_ptr<ItemIterator> TFRecordNode::make_iterator(uint64_t) const {
  return std::make_unique<TFRecordIterator>(*this);
}

}  // namespace

Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordOptions options) {
  detail::check_compression_type(options.compression_type, kReader);
  for (const std::string& f : filenames)
    LS_CHECK(!f.empty(), InvalidArgumentError, kReader, ": a file name is empty; pass the paths of TFRecord files");
  return Dataset(std::make_shared<TFRecordNode>(std::move(filenames), std::move(options)));
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
