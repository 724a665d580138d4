// file_reader: the source node shared by the readers that go through their files one item at a time, and its
// iterator, whose state is the position in the file list.
#include "input_file-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class FileReaderNode final : public DatasetNode {
 public:
  FileReaderNode(std::vector<std::string> files, std::shared_ptr<const FileReader> reader)
      : DatasetNode(reader->name,
                    {{"filenames", describe_files(files)}, {"compression_type", reader->compression_type}}, {}),
        files_(std::move(files)),
        reader_(std::move(reader)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, reader_->name, " takes no input dataset, got ", inputs.size());
    return std::make_shared<FileReaderNode>(files_, reader_);
  }
  std::vector<std::string> files() const override { return files_; }
  NodePtr with_files(std::vector<std::string> files) const override {
    return std::make_shared<FileReaderNode>(std::move(files), reader_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::vector<std::string> files_;
  std::shared_ptr<const FileReader> reader_;
};

class FileReaderIterator final : public ItemIterator {
 public:
  explicit FileReaderIterator(const FileReaderNode& node) : node_(node), reader_(*node.reader_) {}

  std::optional<Item> next() override {
    while (file_ < node_.files_.size()) {
      if (!in_) {
        in_ = std::make_unique<InputFile>(node_.files_[file_], reader_.compression_type, reader_.name);
        if (offset_ > 0) in_->seek(offset_);
      }
      if (std::optional<Element> item = reader_.read_one(*in_, index_)) {
        ++index_;
        offset_ = in_->offset();
        return Item{-1, std::move(*item)};
      }
      in_.reset();
      ++file_;
      index_ = 0;
      offset_ = 0;
    }
    return std::nullopt;
  }

  json save_state() const override { return {{"file", file_}, {reader_.unit, index_}, {"offset", offset_}}; }

  void restore_state(const json& state) override {
    const int64_t file = state.at("file").get<int64_t>(), index = state.at(reader_.unit).get<int64_t>(),
                  offset = state.at("offset").get<int64_t>();
    LS_CHECK(file >= 0 && file <= static_cast<int64_t>(node_.files_.size()) && index >= 0 && offset >= 0, ValueError,
             "restore_state: the saved ", reader_.name, " position (file ", file, ", ", reader_.unit, " ", index,
             ", offset ", offset, ") does not fit its ", node_.files_.size(),
             " files; restore into an iterator of the same pipeline");
    in_.reset();  // reopened (and sought) by the next next()
    file_ = static_cast<size_t>(file);
    index_ = index;
    offset_ = static_cast<uint64_t>(offset);
  }

 private:
  const FileReaderNode& node_;
  const FileReader& reader_;
  std::unique_ptr<InputFile> in_;
  size_t file_ = 0;
  int64_t index_ = 0;
  uint64_t offset_ = 0;
};

std::unique_ptr<ItemIterator> FileReaderNode::make_iterator(uint64_t) const {
  return std::make_unique<FileReaderIterator>(*this);
}

}  // namespace

Dataset file_reader(std::vector<std::string> files, FileReader reader) {
  check_compression_type(reader.compression_type, reader.name);
  for (const std::string& f : files)
    LS_CHECK(!f.empty(), InvalidArgumentError, reader.name,
             ": a file name is empty; pass the path of every file to read");
  return Dataset(
      std::make_shared<FileReaderNode>(std::move(files), std::make_shared<const FileReader>(std::move(reader))));
}

}  // namespace lockstep::data::detail
