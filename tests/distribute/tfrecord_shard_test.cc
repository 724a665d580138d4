// Auto-sharding of file-based input (TF's AutoShardPolicy): two workers' InputContexts over TFRecord files read
// disjoint files that together hold every record under AUTO and FILE; too few files fall back to DATA under AUTO
// and are an error under FILE.
#include <gtest/gtest.h>

#include <algorithm>

#include "../data/tfrecord_test_util.h"
#include "../two_workers.h"
#include "lockstep/data/csv.h"
#include "lockstep/data/tfrecord.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::distribute {
namespace {

using AutoShardPolicy = data::Options::AutoShardPolicy;
using data::testing::error_of;
using data::testing::records_of;
using data::testing::TempDir;

// Files part-0..part-(n-1), record r of file f being "f<f>r<r>".
std::vector<std::string> write_parts(const TempDir& tmp, int files, int records_per_file) {
  std::vector<std::string> out;
  for (int f = 0; f < files; ++f) {
    out.push_back(tmp / ("part-" + std::to_string(f) + ".tfrecord"));
    data::TFRecordWriter w(out.back());
    for (int r = 0; r < records_per_file; ++r) {
      std::string record = "f";  // appended: GCC 12 warns falsely (-Wrestrict) on "f" + s + "r" + t
      record.append(std::to_string(f)).append("r").append(std::to_string(r));
      w.write(record);
    }
  }
  return out;
}

data::Dataset with_policy(const data::Dataset& ds, AutoShardPolicy policy) {
  data::Options o;
  o.auto_shard_policy = policy;
  return ds.with_options(o);
}

std::vector<std::string> files_read(const std::vector<std::string>& records) {
  std::vector<std::string> out;
  for (const std::string& r : records) {
    std::string f = r.substr(0, r.find('r'));
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(AutoShard, TwoWorkersReadDisjointFilesThatTogetherHoldEveryRecord) {
  TempDir tmp;
  const auto files = write_parts(tmp, 5, 3);
  const std::vector<std::string> all = records_of(data::TFRecordDataset(files));
  for (AutoShardPolicy policy : {AutoShardPolicy::AUTO, AutoShardPolicy::FILE}) {
    const data::Dataset ds = with_policy(data::TFRecordDataset(files), policy);
    const auto w0 = records_of(
        auto_shard_dataset(ds, {.num_input_pipelines = 2, .input_pipeline_id = 0, .num_replicas_in_sync = 2}));
    const auto w1 = records_of(
        auto_shard_dataset(ds, {.num_input_pipelines = 2, .input_pipeline_id = 1, .num_replicas_in_sync = 2}));
    EXPECT_EQ(files_read(w0), (std::vector<std::string>{"f0", "f2", "f4"}));  // whole files, every second one
    EXPECT_EQ(files_read(w1), (std::vector<std::string>{"f1", "f3"}));
    std::vector<std::string> both = w0;
    both.insert(both.end(), w1.begin(), w1.end());
    EXPECT_EQ(sorted(both), sorted(all));
  }
}

// The reader is found under the transformations above it, which are rebuilt over the sharded reader.
TEST(AutoShard, FindsTheReaderUnderTheTransformations) {
  TempDir tmp;
  const auto files = write_parts(tmp, 4, 5);
  const data::Dataset ds =
      data::TFRecordDataset(files).filter([](const data::Element&) { return true; }).shuffle(7, 1).take(100);
  std::vector<std::string> both;
  for (int w = 0; w < 2; ++w) {
    const auto mine = records_of(auto_shard_dataset(ds, {2, w, 2}));
    EXPECT_EQ(sorted(files_read(mine)),
              (w == 0 ? std::vector<std::string>{"f0", "f2"} : std::vector<std::string>{"f1", "f3"}));
    both.insert(both.end(), mine.begin(), mine.end());
  }
  EXPECT_EQ(sorted(both), sorted(records_of(data::TFRecordDataset(files))));
}

TEST(AutoShard, TooFewFilesShardByDataUnderAutoAndFailUnderFile) {
  TempDir tmp;
  const auto files = write_parts(tmp, 1, 6);
  const auto w1 = records_of(auto_shard_dataset(data::TFRecordDataset(files), {2, 1, 2}));
  EXPECT_EQ(w1, (std::vector<std::string>{"f0r1", "f0r3", "f0r5"}));  // every second record
  const std::string msg = error_of<ValueError>([&] {
    auto_shard_dataset(with_policy(data::TFRecordDataset(files), AutoShardPolicy::FILE), {2, 0, 2});
  });
  EXPECT_NE(msg.find("auto-shard policy FILE: the dataset reads 1 file(s) but there are 2 workers"), std::string::npos)
      << msg;
  // From tensors: DATA under AUTO, an error under FILE.
  const data::Dataset range = data::Dataset::range(0, 6);
  EXPECT_EQ(auto_shard_dataset(range, {3, 2, 3}).cardinality(), 2);
  EXPECT_NE(error_of<ValueError>([&] {
              auto_shard_dataset(with_policy(range, AutoShardPolicy::FILE), {2, 0, 2});
            }).find("needs a dataset read from files"),
            std::string::npos);
}

TEST(AutoShard, DataAndOffIgnoreTheFiles) {
  TempDir tmp;
  const auto files = write_parts(tmp, 4, 2);
  const auto data_shard =
      records_of(auto_shard_dataset(with_policy(data::TFRecordDataset(files), AutoShardPolicy::DATA), {2, 0, 2}));
  EXPECT_EQ(data_shard, (std::vector<std::string>{"f0r0", "f1r0", "f2r0", "f3r0"}));
  EXPECT_EQ(
      records_of(auto_shard_dataset(with_policy(data::TFRecordDataset(files), AutoShardPolicy::OFF), {2, 1, 2})).size(),
      8u);
  // One pipeline: nothing to shard, whatever the policy.
  EXPECT_EQ(records_of(auto_shard_dataset(with_policy(data::TFRecordDataset(files), AutoShardPolicy::FILE), {1, 0, 1}))
                .size(),
            8u);
}

// make_csv_dataset's reader is found under its shuffle, repeat and batch.
TEST(AutoShard, CsvFilesToo) {
  TempDir tmp;
  for (int f = 0; f < 3; ++f) {
    std::string csv = "a,label\n";
    for (int r = 0; r < 4; ++r) csv.append(std::to_string(10 * f + r)).append(",0\n");
    data::testing::write_bytes(tmp / ("part-" + std::to_string(f) + ".csv"), csv);
  }
  const data::Dataset ds =
      data::experimental::make_csv_dataset(tmp / "part-*.csv", 2, {.label_name = "label", .num_epochs = 1});
  std::vector<float> seen[2];
  for (int w = 0; w < 2; ++w)
    for (const data::Element& b : auto_shard_dataset(ds, {2, w, 2}))
      for (float v : b.x().to_vector<float>()) seen[w].push_back(v);
  std::sort(seen[0].begin(), seen[0].end());
  std::sort(seen[1].begin(), seen[1].end());
  EXPECT_EQ(seen[0], (std::vector<float>{0, 1, 2, 3, 20, 21, 22, 23}));
  EXPECT_EQ(seen[1], (std::vector<float>{10, 11, 12, 13}));
}

// Two workers (threads, each with its own MultiWorkerMirroredStrategy): experimental_distribute_dataset under AUTO
// gives each its own files, every record is read once, and a saved position resumes on each worker.
TEST(AutoShard, ExperimentalDistributeDatasetShardsByFileAcrossWorkers) {
  TempDir tmp;
  const auto files = write_parts(tmp, 4, 3);
  std::vector<std::vector<std::string>> read(2), resumed(2), continued(2);
  auto worker = [&](int rank, MultiWorkerMirroredStrategy& strategy) {
    const DistributedDataset dist = strategy.experimental_distribute_dataset(data::TFRecordDataset(files).batch(2));
    auto records = [](const PerReplica<data::Batch>& b, std::vector<std::string>& out) {
      const data::StringTensor& x = b.values.at(0).string();  // [1]: one record per replica
      out.push_back(x.item());
    };
    auto it = dist.begin();
    std::optional<nlohmann::json> saved;
    for (int step = 0; auto b = it.next(); ++step) {
      records(*b, read[static_cast<size_t>(rank)]);
      if (step == 1) saved = it.save_state();
      if (step > 1) records(*b, continued[static_cast<size_t>(rank)]);
    }
    auto again = dist.make_iterator(0);
    again.restore_state(*saved);
    while (auto b = again.next()) records(*b, resumed[static_cast<size_t>(rank)]);
  };
  const std::vector<std::string> errors = testing::on_two_workers(worker);
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(files_read(read[0]), (std::vector<std::string>{"f0", "f2"}));
  EXPECT_EQ(files_read(read[1]), (std::vector<std::string>{"f1", "f3"}));
  std::vector<std::string> both = read[0];
  both.insert(both.end(), read[1].begin(), read[1].end());
  EXPECT_EQ(sorted(both), sorted(records_of(data::TFRecordDataset(files))));
  EXPECT_EQ(resumed, continued);
  EXPECT_EQ(continued[0].size(), 4u);
}

}  // namespace
}  // namespace lockstep::distribute
