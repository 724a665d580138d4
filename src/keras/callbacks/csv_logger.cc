// keras.callbacks.CSVLogger: epoch and every log, one row per epoch, the file rewritten atomically.
#include "lockstep/keras/callbacks/csv_logger.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "lockstep/core/files.h"

namespace lockstep::keras::callbacks {

namespace {
class CSVLoggerCallback : public Callback {
 public:
  CSVLoggerCallback(std::string filename, CSVLoggerOptions o) : filename_(std::move(filename)), opt_(o) {}
  void on_train_begin(const Logs&) override {
    check_writable(filename_, "CSVLogger file");
    text_.clear();
    if (opt_.append) {
      std::ifstream in(filename_);
      text_.assign(std::istreambuf_iterator<char>(in), {});
    }
    header_written_ = !text_.empty();
  }
  // The whole file is rewritten atomically each epoch (it is small), so a crash or a full disk never
  // leaves a torn row.
  void on_epoch_end(int64_t epoch, const Logs& logs) override {
    std::vector<std::pair<std::string, double>> items = logs.items();
    std::sort(items.begin(), items.end());
    std::ostringstream row;
    if (!header_written_) {
      row << "epoch";
      for (const auto& [k, v] : items) row << opt_.separator << k;
      row << "\n";
      header_written_ = true;
    }
    row << epoch;
    for (const auto& [k, v] : items) row << opt_.separator << v;
    row << "\n";
    text_ += row.str();
    write_file_atomically(filename_, text_);
  }

 private:
  std::string filename_;
  CSVLoggerOptions opt_;
  std::string text_;
  bool header_written_ = false;
};
}  // namespace

std::shared_ptr<Callback> CSVLogger(const std::string& filename, CSVLoggerOptions options) {
  return std::make_shared<CSVLoggerCallback>(filename, options);
}

}  // namespace lockstep::keras::callbacks
