// TextLineDataset: a source node over a list of files whose iterator reads one line at a time.
#include "input_file-impl.h"
#include "lockstep/data/text_line.h"

namespace lockstep::data {

using nlohmann::json;

namespace {

constexpr const char* kReader = "TextLineDataset";

class TextLineNode final : public DatasetNode {
 public:
  TextLineNode(std::vector<std::string> files, TextLineOptions options)
      : DatasetNode(kReader,
                    {{"filenames", detail::describe_files(files)}, {"compression_type", options.compression_type}}, {}),
        files_(std::move(files)),
        options_(std::move(options)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, kReader, " takes no input dataset, got ", inputs.size());
    return std::make_shared<TextLineNode>(files_, options_);
  }
  std::vector<std::string> files() const override { return files_; }
  NodePtr with_files(std::vector<std::string> files) const override {
    return std::make_shared<TextLineNode>(std::move(files), options_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::vector<std::string> files_;
  TextLineOptions options_;
};

// State: the file being read, the number of lines already read from it, and the byte offset after them.
class TextLineIterator final : public ItemIterator {
 public:
  explicit TextLineIterator(const TextLineNode& node) : node_(node) {}

  std::optional<Item> next() override {
    while (file_ < node_.files_.size()) {
      if (!in_) {
        in_ = std::make_unique<detail::InputFile>(node_.files_[file_], node_.options_.compression_type, kReader);
        if (offset_ > 0) in_->seek(offset_);
      }
      if (std::optional<std::string> line = read_line()) {
        ++line_;
        offset_ = in_->offset();
        return Item{-1, Element(StringTensor::scalar(std::move(*line)))};
      }
      in_.reset();
      ++file_;
      line_ = 0;
      offset_ = 0;
    }
    return std::nullopt;
  }

  json save_state() const override { return {{"file", file_}, {"line", line_}, {"offset", offset_}}; }

  void restore_state(const json& state) override {
    const int64_t file = state.at("file").get<int64_t>(), line = state.at("line").get<int64_t>(),
                  offset = state.at("offset").get<int64_t>();
    LS_CHECK(file >= 0 && file <= static_cast<int64_t>(node_.files_.size()) && line >= 0 && offset >= 0, ValueError,
             "restore_state: the saved ", kReader, " position (file ", file, ", line ", line, ", offset ", offset,
             ") does not fit its ", node_.files_.size(), " files; restore into an iterator of the same pipeline");
    in_.reset();  // reopened (and sought) by the next next()
    file_ = static_cast<size_t>(file);
    line_ = line;
    offset_ = static_cast<uint64_t>(offset);
  }

 private:
  // The next line of the open file, or nullopt at its end.
  std::optional<std::string> read_line() {
    std::string line;
    int c = in_->get();
    if (c < 0) return std::nullopt;
    for (; c >= 0 && c != '\n'; c = in_->get()) line.push_back(static_cast<char>(c));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }

  const TextLineNode& node_;
  std::unique_ptr<detail::InputFile> in_;
  size_t file_ = 0;
  int64_t line_ = 0;
  uint64_t offset_ = 0;
};

std::unique_ptr<ItemIterator> TextLineNode::make_iterator(uint64_t) const {
  return std::make_unique<TextLineIterator>(*this);
}

}  // namespace

Dataset TextLineDataset(std::vector<std::string> filenames, TextLineOptions options) {
  detail::check_compression_type(options.compression_type, kReader);
  for (const std::string& f : filenames)
    LS_CHECK(!f.empty(), InvalidArgumentError, kReader, ": a file name is empty; pass the paths of text files");
  return Dataset(std::make_shared<TextLineNode>(std::move(filenames), std::move(options)));
}

}  // namespace lockstep::data
