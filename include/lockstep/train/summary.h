// tf.summary: scalars, histograms and text written to TensorBoard event files
// ("<logdir>/events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>", TFRecords of Event protobufs, the first one
// holding file_version "brain.Event:2"), in the form TF 2 writes them, so TensorBoard's dashboards read them.
//
//   auto writer = ls::summary::create_file_writer("logs/train");
//   ls::summary::scalar("loss", loss, step, &writer);          // an explicit writer, or TF's default-writer form:
//   { auto scope = writer.as_default(); ls::summary::scalar("loss", loss, step); }
//
// Writers know nothing of strategies: under a multi-worker strategy let the chief alone write (or give each worker
// a logdir of its own), as in TF. keras::callbacks::TensorBoard does this for fit().
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lockstep/tensor/tensor.h"

namespace lockstep::summary {

struct FileWriterOptions {
  // Events held in memory before they are written out together (TF's max_queue).
  int max_queue = 10;
  // A background thread writes out held events this often, in milliseconds (TF's flush_millis); <= 0 writes
  // every event at once.
  int64_t flush_millis = 120000;
  // Ends the file's name; TF 2 writes ".v2".
  std::string filename_suffix = ".v2";
};

// One event file. Copies share it (TF's writer resource); the last copy to go closes it. Safe to use from
// several threads. Errors (a full disk, a removed directory) name the file and surface on the next write, flush
// or close.
class SummaryWriter {
 public:
  // Makes this writer the default of summary calls that name none, on this thread, until the scope ends; the
  // previous default comes back then (TF's `with writer.as_default():`).
  class DefaultScope {
   public:
    explicit DefaultScope(const SummaryWriter& writer);
    ~DefaultScope();
    DefaultScope(const DefaultScope&) = delete;
    DefaultScope& operator=(const DefaultScope&) = delete;

   private:
    SummaryWriter* previous_;
    std::unique_ptr<SummaryWriter> current_;
  };
  [[nodiscard]] DefaultScope as_default() const { return DefaultScope(*this); }

  // Writes every held event to the file and hands it to the operating system.
  void flush();
  // Flushes and closes the file; later summaries to this writer are a ValueError. Closing twice is harmless.
  void close();

  const std::string& logdir() const;
  const std::string& path() const;  // the event file

  struct Impl;
  explicit SummaryWriter(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// Creates `logdir` (and its parents) and a new event file in it, which holds the file_version event at once.
SummaryWriter create_file_writer(const std::string& logdir, FileWriterOptions options = {});

// Each summary goes to `writer`, or else to this thread's default writer (as_default()); with neither it writes
// nothing and returns false, as TF's do. `name` is the tag TensorBoard shows; steps are any int64.

// A float32 scalar for the "scalars" dashboard (TF casts to float32 too).
bool scalar(const std::string& name, double data, int64_t step, SummaryWriter* writer = nullptr);

// The values of `data` (any shape and dtype) in `buckets` equal-width buckets between their minimum and maximum,
// as TF's tf.summary.histogram computes them: a float64 [buckets, 3] tensor of (left edge, right edge, count)
// rows for the "histograms" and "distributions" dashboards. All values equal: every edge is that value and the
// last bucket counts them all; no values: all zeros. NaNs are not counted. buckets < 0: InvalidArgumentError (TF
// fails making a tensor of that many rows).
bool histogram(const std::string& name, const Tensor& data, int64_t step, SummaryWriter* writer = nullptr,
               int buckets = 30);

// A string for the "text" dashboard (Markdown).
bool text(const std::string& name, const std::string& data, int64_t step, SummaryWriter* writer = nullptr);

// tf.summary.write for a string: a scalar string tensor for the dashboard of `plugin_name`, with that plugin's
// settings in `plugin_content` (text() is write(name, data, step, "text")).
bool write(const std::string& name, const std::string& data, int64_t step, const std::string& plugin_name,
           const std::string& plugin_content = "", SummaryWriter* writer = nullptr);

// Flushes `writer`, or the default writer; nothing without either.
void flush(SummaryWriter* writer = nullptr);

}  // namespace lockstep::summary
