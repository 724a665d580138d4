// TextLineDataset: a file reader (file_reader.cc) that reads one line at a time, ending at "\n" or "\r\n" or at the
// end of the file.
#include "input_file-impl.h"
#include "lockstep/data/text_line.h"

namespace lockstep::data {

namespace {

// The next line of `in`, or nullopt at its end.
std::optional<Element> read_line(detail::InputFile& in, int64_t /*index*/) {
  int c = in.get();
  if (c < 0) return std::nullopt;
  std::vector<std::string> line(1);  // not StringTensor::scalar: its initializer_list would copy the bytes
  for (; c >= 0 && c != '\n'; c = in.get()) line[0].push_back(static_cast<char>(c));
  if (!line[0].empty() && line[0].back() == '\r') line[0].pop_back();
  return Element(StringTensor(Shape(), std::move(line)));
}

}  // namespace

Dataset TextLineDataset(std::vector<std::string> filenames, TextLineOptions options) {
  return detail::file_reader(std::move(filenames),
                             {"TextLineDataset", "line", std::move(options.compression_type), read_line});
}

}  // namespace lockstep::data
