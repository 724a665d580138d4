// make_csv_dataset: a reader node over CSV files (an RFC 4180 record parser on InputFile, the column layout resolved
// once when the dataset is made) whose rows become Element{x = features, y = label}, then shuffle, repeat and batch
// as TF's make_csv_dataset applies them.
#include "lockstep/data/csv.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "input_file-impl.h"
#include "lockstep/core/files.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::data::experimental {

using nlohmann::json;

namespace {

constexpr const char* kReader = "make_csv_dataset";

// Where a CSV problem is: "rows.csv:4, column 3 (\"x2\")".
std::string at(const std::string& path, int64_t line, size_t column, const std::vector<std::string>& names) {
  std::string out = make_message(path, ":", line);
  if (column > 0) {
    out += make_message(", column ", column);
    if (column <= names.size()) out += " (\"" + names[column - 1] + "\")";
  }
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Text never starts with gzip's magic number.
void check_not_gzipped(const detail::InputFile& in) {
  LS_CHECK(!in.starts_like_gzip(), DataLossError, kReader, ": ", in.path(),
           " is gzip-compressed; pass compression_type \"GZIP\"");
}

// Reads RFC 4180 records from an InputFile: fields separated by the delimiter, records by \n or \r\n; a quoted field
// may hold the delimiter, line breaks and "" for a quote. Counts lines for error messages.
class RecordReader {
 public:
  RecordReader(detail::InputFile& in, char delim, bool quotes, int64_t line, const std::vector<std::string>& names)
      : in_(in), delim_(delim), quotes_(quotes), line_(line), names_(names) {}

  // The next record's fields, or false at the end of the file. Blank lines are skipped. start_line: its first line.
  bool next(std::vector<std::string>& fields, int64_t& start_line) {
    for (;;) {
      int c = in_.get();
      if (c < 0) return false;
      start_line = line_;
      fields.assign(1, std::string());
      bool in_quotes = false, quoted = false, closed = false;  // closed: after a quoted field's closing quote
      for (;; c = in_.get()) {
        if (in_quotes) {
          if (c < 0) fail(start_line, fields.size(), "a quoted field is not closed before the end of the file");
          if (c == '"') {
            const int d = in_.get();
            if (d == '"') {
              fields.back() += '"';
              continue;
            }
            in_quotes = false;
            closed = true;
            c = d;  // handled below as the character after the field
          } else {
            if (c == '\n') ++line_;
            fields.back() += static_cast<char>(c);
            continue;
          }
        }
        if (c < 0 || c == '\n') {
          if (c == '\n') ++line_;
          std::string& last = fields.back();
          if (!closed && !last.empty() && last.back() == '\r') last.pop_back();
          break;
        }
        if (c == delim_) {
          fields.emplace_back();
          closed = false;
          continue;
        }
        if (closed) {
          if (c == '\r') continue;  // \r\n after a quoted field
          fail(line_, fields.size(),
               make_message("unexpected '", static_cast<char>(c),
                            "' after a quoted field's closing quote (a quote inside a quoted field "
                            "is written \"\")"));
        }
        if (c == '"' && quotes_) {
          if (!fields.back().empty())
            fail(line_, fields.size(),
                 "a quote inside an unquoted field; quote the whole field and double the quote (\"\")");
          in_quotes = quoted = true;
          continue;
        }
        fields.back() += static_cast<char>(c);
      }
      if (fields.size() == 1 && fields[0].empty() && !quoted) continue;  // a blank line
      return true;
    }
  }

  int64_t line() const { return line_; }

  [[noreturn]] void fail(int64_t line, size_t column, const std::string& what) const {
    throw DataLossError(make_message(kReader, ": malformed row at ", at(in_.path(), line, column, names_), ": ", what));
  }

 private:
  detail::InputFile& in_;
  char delim_;
  bool quotes_;
  int64_t line_;
  const std::vector<std::string>& names_;
};

// The column layout, resolved once: which file columns are features (in order) and which is the label.
struct CsvLayout {
  std::vector<std::string> names;  // every column of the files
  std::vector<size_t> features;    // indices into names
  std::optional<size_t> label;
  std::vector<std::optional<double>> defaults;  // per column of the file
  DType label_dtype = DType::float32;
  bool header_from_file = false;  // the names came from the first file's header; every file's header must match
  CsvOptions options;
};

std::optional<double> parse_number(const std::string& field) {
  const std::string s = trim(field, " \t");
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_integer(const std::string& field) {
  const std::string s = trim(field, " \t");
  int64_t v = 0;
  const char* first = s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

class CsvNode final : public DatasetNode {
 public:
  CsvNode(std::vector<std::string> files, std::shared_ptr<const CsvLayout> layout)
      : DatasetNode("CsvDataset",
                    {{"filenames", detail::describe_files(files)},
                     {"features", static_cast<int64_t>(layout->features.size())},
                     {"label", layout->label ? layout->names[*layout->label] : ""}},
                    {}),
        files_(std::move(files)),
        layout_(std::move(layout)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "CsvDataset takes no input dataset, got ", inputs.size());
    return std::make_shared<CsvNode>(files_, layout_);
  }
  std::vector<std::string> files() const override { return files_; }
  NodePtr with_files(std::vector<std::string> files) const override {
    return std::make_shared<CsvNode>(std::move(files), layout_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::vector<std::string> files_;
  std::shared_ptr<const CsvLayout> layout_;
};

// State: the file being read, the byte offset after the last row handed out, and the line there.
class CsvIterator final : public ItemIterator {
 public:
  explicit CsvIterator(const CsvNode& node) : node_(node), layout_(*node.layout_) {}

  std::optional<Item> next() override {
    while (file_ < node_.files_.size()) {
      if (!in_) open();
      int64_t line = 0;
      if (reader_->next(fields_, line)) {
        Element e = row(fields_, line);
        offset_ = in_->offset();
        line_ = reader_->line();
        return Item{-1, std::move(e)};
      }
      reader_.reset();
      in_.reset();
      ++file_;
      offset_ = 0;
      line_ = 1;
    }
    return std::nullopt;
  }

  json save_state() const override { return {{"file", file_}, {"offset", offset_}, {"line", line_}}; }

  void restore_state(const json& state) override {
    const int64_t file = state.at("file").get<int64_t>(), offset = state.at("offset").get<int64_t>(),
                  line = state.at("line").get<int64_t>();
    LS_CHECK(file >= 0 && file <= static_cast<int64_t>(node_.files_.size()) && offset >= 0 && line >= 1, ValueError,
             "restore_state: the saved CSV position (file ", file, ", offset ", offset, ", line ", line,
             ") does not fit its ", node_.files_.size(), " files; restore into an iterator of the same pipeline");
    reader_.reset();
    in_.reset();
    file_ = static_cast<size_t>(file);
    offset_ = static_cast<uint64_t>(offset);
    line_ = line;
  }

 private:
  void open() {
    const CsvOptions& o = layout_.options;
    in_ = std::make_unique<detail::InputFile>(node_.files_[file_], o.compression_type, kReader);
    check_not_gzipped(*in_);
    if (offset_ > 0) in_->seek(offset_);
    reader_ = std::make_unique<RecordReader>(*in_, o.field_delim, o.use_quote_delim, line_, layout_.names);
    if (offset_ == 0 && o.header) {
      int64_t line = 0;
      if (!reader_->next(fields_, line)) return;  // an empty file
      if (layout_.header_from_file && fields_ != layout_.names)
        throw DataLossError(make_message(kReader, ": the header of ", in_->path(), " (", join(fields_),
                                         ") differs from the first file's (", join(layout_.names),
                                         "); give every file the same columns"));
    }
  }

  bool is_empty(const std::string& field) const { return trim(field, " \t").empty() || field == layout_.options.na_value; }

  // The default of column c, whose field in the row at `line` is empty; fails when the column has none.
  double default_of(size_t c, int64_t line) const {
    if (!layout_.defaults[c])
      reader_->fail(line, c + 1, "the field is empty and the column has no default; give it one in column_defaults");
    return *layout_.defaults[c];
  }

  Element row(const std::vector<std::string>& fields, int64_t line) const {
    if (fields.size() != layout_.names.size())
      reader_->fail(
          line, 0,
          make_message("expected ", layout_.names.size(), " fields (", join(layout_.names), "), got ", fields.size()));
    Tensor x = Tensor::empty({static_cast<int64_t>(layout_.features.size())}, DType::float32);
    float* px = x.data<float>();
    for (size_t k = 0; k < layout_.features.size(); ++k) {
      const size_t c = layout_.features[k];
      if (is_empty(fields[c])) {
        px[k] = static_cast<float>(default_of(c, line));
        continue;
      }
      const std::optional<double> v = parse_number(fields[c]);
      if (!v)
        reader_->fail(line, c + 1,
                      make_message("\"", fields[c], "\" is not a number; feature columns are stacked into ",
                                   "float32 x: leave text columns out with select_columns"));
      px[k] = static_cast<float>(*v);
    }
    if (!layout_.label) return Element(std::move(x));
    const size_t c = *layout_.label;
    Tensor y = Tensor::empty({}, layout_.label_dtype);
    if (layout_.label_dtype == DType::float32) {
      const std::optional<double> v = is_empty(fields[c]) ? default_of(c, line) : parse_number(fields[c]);
      if (!v) reader_->fail(line, c + 1, make_message("the label \"", fields[c], "\" is not a number"));
      *y.data<float>() = static_cast<float>(*v);
    } else {
      const std::optional<int64_t> v =
          is_empty(fields[c]) ? static_cast<int64_t>(default_of(c, line)) : parse_integer(fields[c]);
      if (!v || (layout_.label_dtype == DType::int32 && (*v < INT32_MIN || *v > INT32_MAX)))
        reader_->fail(line, c + 1,
                      make_message("the label \"", fields[c], "\" is not an integer of ",
                                   dtype_name(layout_.label_dtype), ", the dtype the first rows gave the label"));
      if (layout_.label_dtype == DType::int32)
        *y.data<int32_t>() = static_cast<int32_t>(*v);
      else
        *y.data<int64_t>() = *v;
    }
    return Element{std::move(x), std::move(y)};
  }

  const CsvNode& node_;
  const CsvLayout& layout_;
  std::unique_ptr<detail::InputFile> in_;
  std::unique_ptr<RecordReader> reader_;
  std::vector<std::string> fields_;
  size_t file_ = 0;
  uint64_t offset_ = 0;
  int64_t line_ = 1;
};

std::unique_ptr<ItemIterator> CsvNode::make_iterator(uint64_t) const {
  return std::make_unique<CsvIterator>(*this);
}

// Column names, selection, defaults and the label's dtype, from the options and the first rows of the files (TF
// does the same when it builds the dataset).
std::shared_ptr<CsvLayout> resolve_layout(const std::vector<std::string>& files, const CsvOptions& o) {
  auto layout = std::make_shared<CsvLayout>();
  layout->options = o;
  layout->names = o.column_names;
  std::vector<std::vector<std::string>> rows;  // the first rows, for inference
  std::vector<std::pair<std::string, int64_t>> row_at;
  for (size_t f = 0;
       f < files.size() && (layout->names.empty() || static_cast<int64_t>(rows.size()) < o.num_rows_for_inference);
       ++f) {
    detail::InputFile in(files[f], o.compression_type, kReader);
    check_not_gzipped(in);
    RecordReader reader(in, o.field_delim, o.use_quote_delim, 1, layout->names);
    std::vector<std::string> fields;
    int64_t line = 0;
    if (o.header && reader.next(fields, line) && layout->names.empty()) {
      layout->names = fields;
      layout->header_from_file = true;
    }
    while (static_cast<int64_t>(rows.size()) < o.num_rows_for_inference && reader.next(fields, line)) {
      rows.push_back(fields);
      row_at.emplace_back(files[f], line);
    }
  }
  LS_CHECK(!layout->names.empty(), ValueError, kReader,
           ": no column names: pass column_names, or set header and give the files a header line",
           o.header ? " (the first file is empty)" : "");
  const std::vector<std::string>& names = layout->names;
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = i + 1; j < names.size(); ++j)
      LS_CHECK(names[i] != names[j], ValueError, kReader, ": the column name \"", names[i], "\" appears twice in (",
               join(names), "); give every column its own name");
  auto index_of = [&](const std::string& name, const char* what) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return i;
    throw ValueError(
        make_message(kReader, ": ", what, " \"", name, "\" is not a column; the columns are: ", join(names)));
  };
  std::vector<bool> selected(names.size(), o.select_columns.empty());
  for (const std::string& s : o.select_columns) selected[index_of(s, "select_columns entry")] = true;
  if (!o.label_name.empty()) {
    layout->label = index_of(o.label_name, "label_name");
    LS_CHECK(selected[*layout->label], ValueError, kReader, ": label_name \"", o.label_name,
             "\" is not among select_columns (", join(o.select_columns), "); select it too");
  }
  std::vector<size_t> used;  // file columns read, in file order
  for (size_t c = 0; c < names.size(); ++c)
    if (selected[c]) used.push_back(c);
  for (size_t c : used)
    if (!layout->label || c != *layout->label) layout->features.push_back(c);
  LS_CHECK(!layout->features.empty(), ValueError, kReader, ": no feature columns are left besides the label \"",
           o.label_name, "\"; select at least one more column");
  // Defaults: one per column, or one per selected column (TF's rule), else 0 everywhere.
  layout->defaults.assign(names.size(), 0.0);
  if (!o.column_defaults.empty()) {
    const bool per_selected = !o.select_columns.empty() && o.column_defaults.size() == used.size();
    LS_CHECK(per_selected || o.column_defaults.size() == names.size(), ValueError, kReader, ": ",
             o.column_defaults.size(), " column_defaults for ", names.size(), " columns",
             o.select_columns.empty() ? "" : make_message(" (", used.size(), " selected)"),
             "; give one default (or nullopt) per column");
    for (size_t k = 0; k < o.column_defaults.size(); ++k)
      layout->defaults[per_selected ? used[k] : k] = o.column_defaults[k];
  }
  // Inference over the first rows: every feature must be numeric; the label is int32, int64 or float32 (TF's order
  // of preference, from the least permissive type that fits every value).
  int label_kind = 0;  // 0: int32, 1: int64, 2: float32
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != names.size()) continue;  // reported with its line when read
    for (size_t c : used) {
      const std::string& f = rows[r][c];
      if (trim(f, " \t").empty() || f == o.na_value) continue;
      LS_CHECK(parse_number(f).has_value(), ValueError, kReader, ": column \"", names[c], "\" holds text (\"", f,
               "\" at ", row_at[r].first, ":", row_at[r].second, "); lockstep stacks ",
               layout->label && c == *layout->label
                   ? "labels into a numeric y: map the classes to numbers first"
                   : "feature columns into float32 x: leave it out with select_columns");
      if (layout->label && c == *layout->label) {
        const std::optional<int64_t> i = parse_integer(f);
        if (!i)
          label_kind = 2;
        else if (*i < INT32_MIN || *i > INT32_MAX)
          label_kind = std::max(label_kind, 1);
      }
    }
  }
  layout->label_dtype = label_kind == 0 ? DType::int32 : label_kind == 1 ? DType::int64 : DType::float32;
  return layout;
}

}  // namespace

Dataset make_csv_dataset(const std::string& file_pattern, int64_t batch_size, const CsvOptions& options) {
  LS_CHECK(batch_size >= 1, InvalidArgumentError, kReader, ": batch_size must be at least 1, got ", batch_size);
  LS_CHECK(options.num_epochs != 0 && options.num_epochs >= -1, InvalidArgumentError, kReader,
           ": num_epochs must be -1 "
           "(forever) or at least 1, got ",
           options.num_epochs);
  LS_CHECK(options.field_delim != '"' && options.field_delim != '\n' && options.field_delim != '\r',
           InvalidArgumentError, kReader, ": field_delim cannot be a quote or a line break");
  detail::check_compression_type(options.compression_type, kReader);
  std::vector<std::string> files = list_files(file_pattern);
  std::shared_ptr<CsvLayout> layout = resolve_layout(files, options);
  Dataset ds(std::make_shared<CsvNode>(std::move(files), std::move(layout)));
  if (options.shuffle) {
    LS_CHECK(options.shuffle_buffer_size >= 1, InvalidArgumentError, kReader,
             ": shuffle_buffer_size must be at least 1, got ", options.shuffle_buffer_size);
    ds = ds.shuffle(options.shuffle_buffer_size, options.shuffle_seed);
  }
  if (options.num_epochs != 1) ds = ds.repeat(options.num_epochs);
  return ds.batch(batch_size, /*drop_remainder=*/options.num_epochs == -1);
}

}  // namespace lockstep::data::experimental
