// tf.summary's counterpart: event files parsed back here (framing, CRCs, Event protobufs), read by TensorBoard's
// Python reader, and histograms compared with TensorFlow's bucketing; queueing, flushing and default writers.
#include "lockstep/train/summary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "lockstep/core/error.h"
#include "lockstep/tensor/ops.h"
#include "../interop_python.h"
#include "../tensorboard_events.h"

namespace lockstep::summary {
namespace {
namespace fs = std::filesystem;
using lockstep::testing::event_files;
using lockstep::testing::read_events;
using lockstep::testing::tensor_values;
namespace tb = lockstep::train::tensorboard;

class Summary : public lockstep::testing::EventFileTest {
 protected:
  // The summary values of an event file (after its file_version event), as (tag, step, value) events.
  static std::vector<tb::Event> summaries(const std::string& file) {
    std::vector<tb::Event> events = read_events(file);
    EXPECT_FALSE(events.empty());
    if (!events.empty()) events.erase(events.begin());
    return events;
  }
};

// Histogram rows (left, right, count) of an event's first value.
std::vector<double> histogram_rows(const tb::Event& event) {
  return tensor_values<double>(event.summary().value(0).tensor());
}

TEST_F(Summary, FileIsNamedAsTensorFlowNamesItAndStartsWithItsVersion) {
  SummaryWriter writer = create_file_writer(path("logs/run"));
  EXPECT_TRUE(fs::is_directory(path("logs/run")));
  const std::string name = fs::path(writer.path()).filename().string();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\.)" + std::string(host) + "\\." +
                                                std::to_string(::getpid()) + R"(\.\d+\.v2)")))
      << name;
  // The first event is on disk before anything is flushed, with whole seconds as its wall time.
  std::vector<tb::Event> events = read_events(writer.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_GT(events[0].wall_time(), 1.7e9);
  EXPECT_EQ(events[0].wall_time(), std::floor(events[0].wall_time()));
  EXPECT_EQ(name.substr(20, 10), std::to_string(static_cast<int64_t>(events[0].wall_time())));

  SummaryWriter second = create_file_writer(path("logs/run"), {.filename_suffix = ".mine"});
  EXPECT_NE(second.path(), writer.path());
  EXPECT_TRUE(second.path().ends_with(".mine"));
}

TEST_F(Summary, ScalarsHistogramsAndTextAreTheTensorsTensorFlow2Writes) {
  {
    SummaryWriter writer = create_file_writer(path("run"));
    EXPECT_TRUE(scalar("loss", 0.1, 3, &writer));
    EXPECT_TRUE(scalar("loss", -2.5, 4, &writer));
    EXPECT_TRUE(histogram("h", from_vector<float>({1, 2, 3, 4, 10}, {5}), 1, &writer, 4));
    EXPECT_TRUE(text("notes", "hello *world*", 2, &writer));
  }  // the last copy going closes (and flushes) the file
  const std::vector<std::string> files = event_files(path("run"));
  ASSERT_EQ(files.size(), 1u);
  std::vector<tb::Event> events = summaries(files[0]);
  ASSERT_EQ(events.size(), 4u);
  for (const tb::Event& e : events) ASSERT_EQ(e.summary().value_size(), 1);

  const tb::Summary::Value& loss = events[0].summary().value(0);
  EXPECT_EQ(loss.tag(), "loss");
  EXPECT_EQ(events[0].step(), 3);
  EXPECT_EQ(loss.metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_EQ(loss.tensor().dtype(), tb::DT_FLOAT);
  EXPECT_EQ(loss.tensor().tensor_shape().dim_size(), 0);
  EXPECT_EQ(tensor_values<float>(loss.tensor()), std::vector<float>{0.1f});
  EXPECT_EQ(tensor_values<float>(events[1].summary().value(0).tensor()), std::vector<float>{-2.5f});
  EXPECT_EQ(events[1].step(), 4);
  EXPECT_GE(events[1].wall_time(), events[0].wall_time());

  // TF 2.21's rows for these values and 4 buckets (written by tf.summary.histogram and read back).
  const tb::Summary::Value& h = events[2].summary().value(0);
  EXPECT_EQ(h.metadata().plugin_data().plugin_name(), "histograms");
  EXPECT_EQ(h.tensor().dtype(), tb::DT_DOUBLE);
  ASSERT_EQ(h.tensor().tensor_shape().dim_size(), 2);
  EXPECT_EQ(h.tensor().tensor_shape().dim(0).size(), 4);
  EXPECT_EQ(h.tensor().tensor_shape().dim(1).size(), 3);
  EXPECT_EQ(histogram_rows(events[2]),
            (std::vector<double>{1, 3.25, 3, 3.25, 5.5, 1, 5.5, 7.75, 0, 7.75, 10, 1}));

  const tb::Summary::Value& t = events[3].summary().value(0);
  EXPECT_EQ(t.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(t.tensor().dtype(), tb::DT_STRING);
  ASSERT_EQ(t.tensor().string_val_size(), 1);
  EXPECT_EQ(t.tensor().string_val(0), "hello *world*");
}

TEST_F(Summary, HistogramEdgeCasesFollowTensorFlow) {
  SummaryWriter writer = create_file_writer(path("run"), {.max_queue = 0});
  histogram("same", from_vector<float>({2, 2, 2}, {3}), 0, &writer, 3);
  histogram("empty", from_vector<float>({}, {0}), 0, &writer, 2);
  histogram("none", from_vector<float>({1, 2}, {2}), 0, &writer, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  histogram("nan", from_vector<float>({0, nan, 1}, {3}), 0, &writer, 2);
  histogram("ints", from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 5}), 0, &writer);
  std::vector<tb::Event> events = summaries(writer.path());
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(histogram_rows(events[0]), (std::vector<double>{2, 2, 0, 2, 2, 0, 2, 2, 3}));
  EXPECT_EQ(histogram_rows(events[1]), std::vector<double>(6, 0.0));
  EXPECT_EQ(events[2].summary().value(0).tensor().tensor_shape().dim(0).size(), 0);
  EXPECT_EQ(histogram_rows(events[3]), (std::vector<double>{0, 0.5, 1, 0.5, 1, 1}));
  // The default 30 buckets; every value counted once.
  std::vector<double> rows = histogram_rows(events[4]);
  ASSERT_EQ(rows.size(), 90u);
  double total = 0;
  for (size_t i = 0; i < 30; ++i) total += rows[3 * i + 2];
  EXPECT_EQ(total, 10);
  EXPECT_EQ(rows[0], 0);
  EXPECT_EQ(rows[89 - 1], 9);
  EXPECT_THROW(histogram("negative", from_vector<float>({1}, {1}), 0, &writer, -1), InvalidArgumentError);
  EXPECT_EQ(summaries(writer.path()).size(), 5u) << "a refused histogram writes nothing";
}

TEST_F(Summary, WithoutAWriterNothingIsWrittenAndTheDefaultWriterIsScoped) {
  EXPECT_FALSE(scalar("loss", 1, 0));
  EXPECT_FALSE(histogram("h", from_vector<float>({1}, {1}), 0));
  EXPECT_FALSE(text("t", "x", 0));
  flush();  // nothing to flush: harmless
  SummaryWriter outer = create_file_writer(path("outer"), {.max_queue = 0});
  SummaryWriter inner = create_file_writer(path("inner"), {.max_queue = 0});
  {
    auto scope = outer.as_default();
    EXPECT_TRUE(scalar("a", 1, 0));
    {
      auto nested = inner.as_default();
      EXPECT_TRUE(scalar("b", 2, 0));
      EXPECT_TRUE(scalar("c", 3, 0, &outer));  // an explicit writer wins over the default
    }
    EXPECT_TRUE(text("d", "back to outer", 0));
  }
  EXPECT_FALSE(scalar("e", 4, 0));
  std::vector<std::string> outer_tags, inner_tags;
  for (const tb::Event& e : summaries(outer.path())) outer_tags.push_back(e.summary().value(0).tag());
  for (const tb::Event& e : summaries(inner.path())) inner_tags.push_back(e.summary().value(0).tag());
  EXPECT_EQ(outer_tags, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(inner_tags, std::vector<std::string>{"b"});
}

TEST_F(Summary, EventsWaitInTheQueueUntilFlushedOrItOverflows) {
  SummaryWriter writer = create_file_writer(path("run"), {.max_queue = 3, .flush_millis = 3600 * 1000});
  for (int i = 0; i < 3; ++i) scalar("x", i, i, &writer);
  EXPECT_EQ(read_events(writer.path()).size(), 1u);  // the file version only
  writer.flush();
  EXPECT_EQ(read_events(writer.path()).size(), 4u);
  for (int i = 3; i < 7; ++i) scalar("x", i, i, &writer);  // the fourth held event overflows the queue
  EXPECT_EQ(read_events(writer.path()).size(), 8u);
  scalar("x", 7, 7, &writer);
  {
    auto scope = writer.as_default();
    flush();
  }
  EXPECT_EQ(read_events(writer.path()).size(), 9u);
  scalar("x", 8, 8, &writer);
  writer.close();
  writer.close();  // twice is harmless
  EXPECT_EQ(read_events(writer.path()).size(), 10u);
  try {
    scalar("x", 9, 9, &writer);
    FAIL() << "a closed writer took a summary";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("is closed"), std::string::npos) << e.what();
  }
}

TEST_F(Summary, HeldEventsAreWrittenEveryFlushMillis) {
  SummaryWriter writer = create_file_writer(path("run"), {.max_queue = 1000, .flush_millis = 20});
  const auto version_only = fs::file_size(writer.path());
  scalar("x", 1, 1, &writer);
  // The background thread writes it without any call: the file grows (polled, giving up after a minute). It is
  // parsed only after close(), so that no read meets a record half written.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (fs::file_size(writer.path()) == version_only && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(fs::file_size(writer.path()), version_only);
  writer.close();
  EXPECT_EQ(read_events(writer.path()).size(), 2u);
}

TEST_F(Summary, AnUnusableLogdirIsAClearError) {
  std::ofstream(path("file")) << "x";
  try {
    create_file_writer(path("file/run"));
    FAIL() << "a logdir under a regular file was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(path("file/run")), std::string::npos) << e.what();
  }
  EXPECT_THROW(create_file_writer(""), ValueError);
}

// Runs TensorBoard's reader on `run_dir`; the JSON it printed, or null when it failed.
nlohmann::json read_with_tensorboard(const std::string& python, const std::string& work, const std::string& run_dir) {
  std::ofstream(work + "/read.py") << lockstep::testing::kTensorBoardReaderScript;
  const std::string out = work + "/read.json";
  const int rc = std::system((python + " " + work + "/read.py " + run_dir + " > " + out + " 2> " + work + "/read.err").c_str());
  std::ifstream err(work + "/read.err");
  EXPECT_EQ(rc, 0) << std::string(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  if (rc != 0) return nullptr;
  return nlohmann::json::parse(std::ifstream(out));
}

TEST_F(Summary, TensorBoardsReaderFindsTheTagsStepsAndValues) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("tensorboard", why);
  if (python.empty()) GTEST_SKIP() << why << "; the records are checked by ScalarsHistogramsAndText...";
  std::vector<float> values;
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<float>(std::sin(i * 0.7) * 3 + i * 0.001));
  {
    SummaryWriter writer = create_file_writer(path("run"));
    auto scope = writer.as_default();
    for (int step = 0; step < 3; ++step) scalar("loss", 1.0 / (step + 3), step);
    histogram("weights", from_vector<float>(values, {10, 100}), 5);
    text("notes", "trained by lockstep", 7);
  }
  nlohmann::json read = read_with_tensorboard(python, dir_.string(), path("run"));
  ASSERT_FALSE(read.is_null());
  ASSERT_EQ(read.size(), 3u) << read.dump();
  ASSERT_EQ(read["loss"].size(), 3u);
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(read["loss"][step][0], step);
    EXPECT_EQ(read["loss"][step][1].get<float>(), static_cast<float>(1.0 / (step + 3)));
    EXPECT_EQ(read["loss"][step][2], "scalars");
  }
  ASSERT_EQ(read["weights"].size(), 1u);
  EXPECT_EQ(read["weights"][0][0], 5);
  EXPECT_EQ(read["weights"][0][2], "histograms");
  const auto rows = read["weights"][0][1].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(rows.size(), 30u);
  double total = 0;
  for (const auto& row : rows) total += row.at(2);
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(rows.front()[0], *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(rows.back()[1], *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(read["notes"], nlohmann::json::parse(R"([[7, "trained by lockstep", "text"]])"));
}

// The same values bucketed by tf.summary.histogram's own code: edges and counts identical.
TEST_F(Summary, HistogramsMatchTensorFlowsBucketing) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("tensorflow", why);
  if (python.empty()) GTEST_SKIP() << why << "; HistogramEdgeCasesFollowTensorFlow holds TF's rows for a small case";
  std::vector<float> values;
  for (int i = 0; i < 777; ++i) values.push_back(static_cast<float>(std::cos(i * 1.3) * std::exp(i % 7 * 0.3) - 0.1));
  SummaryWriter writer = create_file_writer(path("run"), {.max_queue = 0});
  for (int buckets : {1, 7, 30}) histogram("h", from_vector<float>(values, {777}), buckets, &writer, buckets);
  {
    std::ofstream out(path("values.txt"));
    for (float v : values) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g\n", static_cast<double>(v));
      out << buf;
    }
    std::ofstream rows(path("rows.txt"));
    for (const tb::Event& e : summaries(writer.path())) {
      for (double r : histogram_rows(e)) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g ", r);
        rows << buf;
      }
      rows << "\n";
    }
  }
  std::ofstream(path("check.py")) << "import os, sys\n"
                                     "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
                                     "import numpy as np, tensorflow as tf\n"
                                     "from tensorboard.plugins.histogram import summary_v2\n"
                                     "values = np.loadtxt(sys.argv[1], dtype=np.float32)\n"
                                     "ours = [np.array(l.split(), dtype=np.float64) for l in open(sys.argv[2])]\n"
                                     "for k, mine in zip([1, 7, 30], ours):\n"
                                     "    theirs = summary_v2._buckets(tf.constant(values), k).numpy().ravel()\n"
                                     "    if not np.array_equal(theirs, mine):\n"
                                     "        bad = np.nonzero(theirs != mine)[0]\n"
                                     "        sys.exit(f'{k} buckets: TF {[theirs[i].hex() for i in bad]}, lockstep {[mine[i].hex() for i in bad]} at {bad}')\n";
  EXPECT_EQ(std::system((python + " " + path("check.py") + " " + path("values.txt") + " " + path("rows.txt") +
                         " 2> " + path("err.txt"))
                            .c_str()),
            0)
      << std::ifstream(path("err.txt")).rdbuf();
}

}  // namespace
}  // namespace lockstep::summary
