// Reading TensorBoard event files back in tests: a TFRecord parser written here from the format (lengths and
// masked CRC32Cs checked) that yields lockstep's own Event messages, and a script for TensorBoard's Python reader.
// Test helpers only.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lockstep/core/crc32c.h"
#include "train/event.pb.h"

namespace lockstep::testing {

namespace tb = lockstep::train::tensorboard;

// A fresh directory for each test (named after it, under the system's temporary folder), removed afterwards.
class EventFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("lockstep_events_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// Every record of an event file, parsed; a bad length, CRC or message fails the test.
inline std::vector<tb::Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  std::vector<tb::Event> events;
  for (size_t at = 0; at < bytes.size();) {
    if (bytes.size() - at < 12) {
      ADD_FAILURE() << path << ": a truncated record header at offset " << at;
      break;
    }
    uint64_t length;
    std::memcpy(&length, bytes.data() + at, 8);
    EXPECT_EQ(u32(at + 8), masked_crc32c(bytes.data() + at, 8)) << path << ": length CRC at offset " << at;
    if (bytes.size() - at - 12 < length + 4) {
      ADD_FAILURE() << path << ": a truncated record at offset " << at;
      break;
    }
    const char* data = bytes.data() + at + 12;
    EXPECT_EQ(u32(at + 12 + length), masked_crc32c(data, length)) << path << ": data CRC at offset " << at;
    tb::Event event;
    EXPECT_TRUE(event.ParseFromArray(data, static_cast<int>(length))) << path << ": record at offset " << at;
    events.push_back(std::move(event));
    at += 12 + length + 4;
  }
  return events;
}

// The event files in `dir` (not its subfolders), sorted by name.
inline std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// A summary value's tensor content as numbers of type T.
template <typename T> std::vector<T> tensor_values(const tb::Tensor& tensor) {
  std::vector<T> out(tensor.tensor_content().size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), tensor.tensor_content().data(), out.size() * sizeof(T));
  return out;
}

// TensorBoard's own reader (EventAccumulator, with TensorBoard's TF stub so TensorFlow need not be installed) on
// the run directory argv[1]; prints {"tag": [[step, value, plugin], ...]} as JSON, where value is a number for
// scalars, the [k, 3] rows for histograms and the string for text (and other string summaries).
inline const char* kTensorBoardReaderScript = R"(import json, sys, types
sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util
acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={"tensors": 0})
acc.Reload()
out = {}
for tag in acc.Tags()["tensors"]:
    plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
    for e in acc.Tensors(tag):
        value = tensor_util.make_ndarray(e.tensor_proto)
        value = value.item().decode() if e.tensor_proto.dtype == 7 else value.tolist()  # DT_STRING
        out.setdefault(tag, []).append([e.step, value, plugin])
print(json.dumps(out))
)";

}  // namespace lockstep::testing
