// tf.summary's file writer and summaries: Event protobufs (src/train/event.proto) framed as TFRecords, held in a
// queue and written out when it grows past max_queue, every flush_millis (a background thread), on flush() and
// on close.
#include "lockstep/train/summary.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"
#include "lockstep/data/tfrecord.h"
#include "train/event.pb.h"

namespace lockstep::summary {

namespace tb = lockstep::train::tensorboard;

struct SummaryWriter::Impl {
  std::string logdir, path;
  FileWriterOptions options;
  std::mutex mu;
  std::condition_variable wake;
  std::vector<std::string> queue;  // serialized events not yet in the file
  std::unique_ptr<data::TFRecordWriter> file;
  std::exception_ptr error;  // a failed background flush, reported by the next call
  bool closed = false;
  std::thread flusher;

  ~Impl() {
    try {
      close();
    } catch (const std::exception& e) {
      log(LogLevel::error, "summary writer for ", logdir, ": ", e.what());
    }
  }

  void check_error_locked() {
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
  }
  void flush_locked() {
    check_error_locked();
    if (closed || !file) return;  // no file: create_file_writer failed to open it
    for (const std::string& event : queue) file->write(event);
    queue.clear();
    file->flush();
  }
  void write(const tb::Event& event) {
    std::lock_guard lock(mu);
    check_error_locked();
    LS_CHECK(!closed, ValueError, "the summary writer for ", logdir,
             " is closed: write before close(), or create a new writer with create_file_writer()");
    queue.push_back(event.SerializeAsString());
    if (static_cast<int64_t>(queue.size()) > options.max_queue || options.flush_millis <= 0) flush_locked();
  }
  void flush() {
    std::lock_guard lock(mu);
    flush_locked();
  }
  void close() {
    std::exception_ptr failure;
    {
      std::lock_guard lock(mu);
      if (closed) return;
      try {
        flush_locked();
        if (file) file->close();
      } catch (...) {
        failure = std::current_exception();
      }
      closed = true;
    }
    wake.notify_all();
    if (flusher.joinable()) flusher.join();
    if (failure) std::rethrow_exception(failure);
  }
  void run_flusher() {
    std::unique_lock lock(mu);
    const auto period = std::chrono::milliseconds(options.flush_millis);
    while (!closed) {
      if (wake.wait_for(lock, period, [&] { return closed; })) break;
      try {
        if (!error && !queue.empty()) flush_locked();
      } catch (...) {
        error = std::current_exception();
      }
    }
  }
};

namespace {

thread_local SummaryWriter* default_writer = nullptr;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

SummaryWriter* resolve(SummaryWriter* writer) { return writer ? writer : default_writer; }

// Adds a summary value for `plugin`'s dashboard to `event`; the caller fills in the tensor.
tb::Tensor* add_value(tb::Event& event, const std::string& tag, const std::string& plugin, int64_t step) {
  event.set_wall_time(now_seconds());
  event.set_step(step);
  tb::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
  return value->mutable_tensor();
}

template <typename T> std::string little_endian_bytes(const std::vector<T>& values) {
  static_assert(std::endian::native == std::endian::little, "event files hold little-endian numbers");
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

SummaryWriter::DefaultScope::DefaultScope(const SummaryWriter& writer)
    : previous_(default_writer), current_(std::make_unique<SummaryWriter>(writer)) {
  default_writer = current_.get();
}
SummaryWriter::DefaultScope::~DefaultScope() { default_writer = previous_; }

void SummaryWriter::flush() { impl_->flush(); }
void SummaryWriter::close() { impl_->close(); }
const std::string& SummaryWriter::logdir() const { return impl_->logdir; }
const std::string& SummaryWriter::path() const { return impl_->path; }

SummaryWriter create_file_writer(const std::string& logdir, FileWriterOptions options) {
  LS_CHECK(!logdir.empty(), ValueError, "create_file_writer needs a log directory, got an empty string");
  LS_CHECK(options.max_queue >= 0, ValueError, "create_file_writer: max_queue must be >= 0, got ", options.max_queue);
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  LS_CHECK(!ec, ValueError, "cannot create the summary directory ", logdir, " (", ec.message(),
           "): give create_file_writer a directory that can be written");
  // TF's name: seconds, host, process and a per-process writer number keep concurrent writers apart.
  static std::atomic<int> writers_created{0};
  const std::time_t seconds = std::time(nullptr);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(seconds));
  auto impl = std::make_shared<SummaryWriter::Impl>();
  impl->logdir = logdir;
  impl->path = (std::filesystem::path(logdir) /
                make_message("events.out.tfevents.", stamp, ".", hostname(), ".", getpid(), ".", writers_created++,
                             options.filename_suffix))
                   .string();
  impl->options = std::move(options);
  impl->file = std::make_unique<data::TFRecordWriter>(impl->path);
  tb::Event version;
  version.set_wall_time(static_cast<double>(seconds));
  version.set_file_version("brain.Event:2");
  version.mutable_source_metadata()->set_writer("lockstep.summary");
  impl->file->write(version.SerializeAsString());
  impl->file->flush();
  if (impl->options.flush_millis > 0) impl->flusher = std::thread([raw = impl.get()] { raw->run_flusher(); });
  return SummaryWriter(std::move(impl));
}

bool scalar(const std::string& name, double data, int64_t step, SummaryWriter* writer) {
  writer = resolve(writer);
  if (!writer) return false;
  tb::Event event;
  tb::Tensor* tensor = add_value(event, name, "scalars", step);
  tensor->set_dtype(tb::DT_FLOAT);
  tensor->mutable_tensor_shape();  // a scalar: a shape with no dimensions
  tensor->set_tensor_content(little_endian_bytes(std::vector<float>{static_cast<float>(data)}));
  writer->impl().write(event);
  return true;
}

bool histogram(const std::string& name, const Tensor& data, int64_t step, SummaryWriter* writer, int buckets) {
  LS_CHECK(buckets >= 0, InvalidArgumentError, "summary histogram '", name, "': buckets must be 0 or more, got ",
           buckets);
  writer = resolve(writer);
  if (!writer) return false;
  std::vector<double> values = data.to_vector<double>();
  std::erase_if(values, [](double v) { return std::isnan(v); });
  const size_t k = static_cast<size_t>(buckets);
  std::vector<double> rows(k * 3, 0.0);  // (left, right, count) per bucket
  if (!values.empty() && k > 0) {
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    const double min = *lo, max = *hi, range = max - min;
    if (range == 0) {
      for (size_t i = 0; i < k; ++i) rows[3 * i] = rows[3 * i + 1] = max;
      rows[3 * k - 1] = static_cast<double>(values.size());
    } else {
      // TF's arithmetic step by step (float64), so edges and counts match tf.summary.histogram's.
      const double width = range / static_cast<double>(k);
      for (double v : values) {
        const double q = std::floor((v - min) / width);
        const size_t i = q >= 0 ? std::min(static_cast<size_t>(std::min(q, 1e18)), k - 1) : 0;
        rows[3 * i + 2] += 1;
      }
      for (size_t i = 0; i < k; ++i) {  // tf.linspace(min, max, k + 1) with the last edge exactly max
        rows[3 * i] = min + static_cast<double>(i) * width;
        rows[3 * i + 1] = i + 1 == k ? max : min + static_cast<double>(i + 1) * width;
      }
    }
  }
  tb::Event event;
  tb::Tensor* tensor = add_value(event, name, "histograms", step);
  tensor->set_dtype(tb::DT_DOUBLE);
  tensor->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(k));
  tensor->mutable_tensor_shape()->add_dim()->set_size(3);
  tensor->set_tensor_content(little_endian_bytes(rows));
  writer->impl().write(event);
  return true;
}

bool write(const std::string& name, const std::string& data, int64_t step, const std::string& plugin_name,
           const std::string& plugin_content, SummaryWriter* writer) {
  writer = resolve(writer);
  if (!writer) return false;
  tb::Event event;
  tb::Tensor* tensor = add_value(event, name, plugin_name, step);
  event.mutable_summary()->mutable_value(0)->mutable_metadata()->mutable_plugin_data()->set_content(plugin_content);
  tensor->set_dtype(tb::DT_STRING);
  tensor->mutable_tensor_shape();
  tensor->add_string_val(data);
  writer->impl().write(event);
  return true;
}

bool text(const std::string& name, const std::string& data, int64_t step, SummaryWriter* writer) {
  return write(name, data, step, "text", "", writer);
}

void flush(SummaryWriter* writer) {
  if ((writer = resolve(writer))) writer->flush();
}

}  // namespace lockstep::summary
