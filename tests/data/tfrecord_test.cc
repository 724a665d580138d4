// TFRecordDataset: TensorFlow's golden files read record for record (plain and GZIP), corrupt and truncated
// records found with their offset, our writer's files read back (and by TensorFlow), resuming mid-file from a
// saved state, and list_files.
#include "lockstep/data/tfrecord.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "../interop_python.h"
#include "data_test_util.h"
#include "lockstep/data/example.h"
#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using nlohmann::json;
using testing::base64_decode;
using testing::error_of;
using testing::golden;
using testing::read_bytes;
using testing::records_of;
using testing::TempDir;
using testing::write_bytes;

std::vector<std::string> golden_records() {
  std::vector<std::string> out;
  for (const json& r : testing::expected().at("records")) out.push_back(base64_decode(r.get<std::string>()));
  return out;
}

TEST(TFRecordDataset, ReadsTensorFlowsFileRecordForRecord) {
  const auto want = golden_records();
  ASSERT_EQ(want.size(), 12u);
  EXPECT_EQ(records_of(TFRecordDataset({golden("examples.tfrecord")})), want);
  EXPECT_EQ(records_of(TFRecordDataset({golden("examples.tfrecord.gz")}, {.compression_type = "GZIP"})), want);
  // Files one after the other.
  auto twice = want;
  twice.insert(twice.end(), want.begin(), want.end());
  EXPECT_EQ(records_of(TFRecordDataset({golden("examples.tfrecord"), golden("examples.tfrecord")})), twice);
  EXPECT_EQ(TFRecordDataset({golden("examples.tfrecord")}).cardinality(), kUnknownCardinality);
}

// Each element is what TF yields: a tf.string scalar, here a StringTensor leaf of shape [].
TEST(TFRecordDataset, RecordsAreStringScalars) {
  const auto want = golden_records();
  const Element first = *TFRecordDataset({golden("examples.tfrecord")}).begin();
  ASSERT_TRUE(first.is_string()) << first.str();
  EXPECT_EQ(first.string().rank(), 0);
  EXPECT_EQ(first.string(), StringTensor::scalar(want[0]));
  EXPECT_EQ(first.structure(), "string");
  // Batched, as TF's a 1-D string tensor of records.
  const Element batch = *TFRecordDataset({golden("examples.tfrecord.gz")}, {"GZIP"}).batch(5).begin();
  EXPECT_EQ(batch.str(), "string (5,)");
  EXPECT_EQ(batch.string().values, std::vector<std::string>(want.begin(), want.begin() + 5));
}

TEST(TFRecordDataset, CompressionMustMatchTheFile) {
  EXPECT_NE(error_of<DataLossError>([] {
              records_of(TFRecordDataset({golden("examples.tfrecord.gz")}));
            }).find("it starts like a gzip file: pass compression_type \"GZIP\""),
            std::string::npos);
  EXPECT_NE(error_of<DataLossError>([] {
              records_of(TFRecordDataset({golden("examples.tfrecord")}, {"GZIP"}));
            }).find("is not gzip-compressed"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([] { TFRecordDataset({"x"}, {"ZLIB"}); }).find("\"ZLIB\" is not supported"),
            std::string::npos);
}

TEST(TFRecordDataset, MissingFileIsNotFoundNamingIt) {
  TempDir tmp;
  TFRecordWriter(tmp / "a.tfrecord").write("r");
  const Dataset ds = TFRecordDataset({tmp / "a.tfrecord", tmp / "missing.tfrecord"});
  Iterator it = ds.make_iterator();
  EXPECT_TRUE(it.next().has_value());  // lazily: the first file reads before the second is opened
  const std::string msg = error_of<NotFoundError>([&] { it.next(); });
  EXPECT_NE(msg.find("file not found: " + (tmp / "missing.tfrecord")), std::string::npos) << msg;
}

// Offsets of each record in the plain golden file (12-byte header, data, 4-byte CRC).
std::vector<size_t> record_offsets(const std::vector<std::string>& records) {
  std::vector<size_t> out;
  size_t at = 0;
  for (const std::string& r : records) {
    out.push_back(at);
    at += 16 + r.size();
  }
  return out;
}

// Reads `path` to its end; returns the records read before the error and the DataLossError's message.
std::pair<size_t, std::string> read_until_error(const std::string& path, const std::string& compression = "") {
  size_t n = 0;
  std::string msg = error_of<DataLossError>([&] {
    for (const Element& e : TFRecordDataset({path}, {compression})) {
      (void)e;
      ++n;
    }
  });
  return {n, msg};
}

TEST(TFRecordDataset, CorruptDataIsDataLossNamingFileAndOffset) {
  TempDir tmp;
  const auto records = golden_records();
  const auto offsets = record_offsets(records);
  std::string bytes = read_bytes(golden("examples.tfrecord"));
  bytes[offsets[5] + 12 + 3] ^= 0x01;  // one bit of record 5's data
  write_bytes(tmp / "bad.tfrecord", bytes);
  auto [n, msg] = read_until_error(tmp / "bad.tfrecord");
  EXPECT_EQ(n, 5u);
  EXPECT_NE(
      msg.find("corrupted record #5 at byte offset " + std::to_string(offsets[5]) + " of " + (tmp / "bad.tfrecord")),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("data CRC mismatch"), std::string::npos) << msg;
}

TEST(TFRecordDataset, CorruptLengthIsDataLossNamingTheLengthCrc) {
  TempDir tmp;
  const auto offsets = record_offsets(golden_records());
  std::string bytes = read_bytes(golden("examples.tfrecord"));
  bytes[offsets[2] + 1] ^= 0x40;  // the length's second byte: a length CRC mismatch, never a huge read
  write_bytes(tmp / "bad.tfrecord", bytes);
  auto [n, msg] = read_until_error(tmp / "bad.tfrecord");
  EXPECT_EQ(n, 2u);
  EXPECT_NE(msg.find("at byte offset " + std::to_string(offsets[2])), std::string::npos) << msg;
  EXPECT_NE(msg.find("length CRC mismatch"), std::string::npos) << msg;
}

TEST(TFRecordDataset, TruncatedFileIsDataLoss) {
  TempDir tmp;
  const auto records = golden_records();
  const auto offsets = record_offsets(records);
  const std::string bytes = read_bytes(golden("examples.tfrecord"));
  // Cut inside the header, the data and the CRC of the last record.
  for (size_t into : {size_t{5}, size_t{12 + 7}, records.back().size() + 14}) {
    SCOPED_TRACE(into);
    write_bytes(tmp / "cut.tfrecord", bytes.substr(0, offsets.back() + into));
    auto [n, msg] = read_until_error(tmp / "cut.tfrecord");
    EXPECT_EQ(n, records.size() - 1);
    EXPECT_NE(msg.find("corrupted record #11 at byte offset " + std::to_string(offsets.back())), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  // A gzip stream cut short: zlib's error, with the uncompressed offset.
  const std::string gz = read_bytes(golden("examples.tfrecord.gz"));
  write_bytes(tmp / "cut.tfrecord.gz", gz.substr(0, gz.size() / 2));
  auto [n, msg] = read_until_error(tmp / "cut.tfrecord.gz", "GZIP");
  EXPECT_LT(n, records.size());
  EXPECT_NE(msg.find(tmp / "cut.tfrecord.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset"), std::string::npos) << msg;
}

TEST(TFRecordDataset, ReadsWhatTFRecordWriterWrote) {
  TempDir tmp;
  std::vector<std::string> records = {"", "a", std::string(1, '\0'), std::string(3 << 20, 'x'), "last"};
  records[3][12345] = 'y';
  for (const std::string compression : {"", "GZIP"}) {
    const std::string path = tmp / ("w" + compression + ".tfrecord");
    {
      TFRecordWriter w(path, {compression});
      for (const std::string& r : records) w.write(r);
      w.close();
    }
    EXPECT_EQ(records_of(TFRecordDataset({path}, {compression})), records) << compression;
  }
  // A plain file that starts with gzip's magic bytes: a first record of 0x8b1f bytes.
  TFRecordWriter(tmp / "magic.tfrecord").write(std::string(0x8b1f, 'm'));
  EXPECT_EQ(read_bytes(tmp / "magic.tfrecord").substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(records_of(TFRecordDataset({tmp / "magic.tfrecord"})), std::vector<std::string>{std::string(0x8b1f, 'm')});
}

// The state is (file, record, offset): a new iterator of a rebuilt pipeline continues mid-file, plain or gzipped,
// also when the state was saved at the very end of a file, and through shuffle's buffer.
TEST(TFRecordDataset, StateRestoresMidFile) {
  TempDir tmp;
  std::vector<std::string> files;
  std::vector<std::string> all;
  for (int f = 0; f < 3; ++f) files.push_back(tmp / ("part-" + std::to_string(f) + ".tfrecord"));
  for (const std::string compression : {"", "GZIP"}) {
    all.clear();
    for (int f = 0; f < 3; ++f) {
      TFRecordWriter w(files[f], {compression});
      for (int r = 0; r < 4 + f; ++r) {
        all.push_back("file " + std::to_string(f) + " record " + std::to_string(r) + std::string(r * 7, '.'));
        w.write(all.back());
      }
    }
    auto make = [&] { return TFRecordDataset(files, {compression}); };
    for (size_t before : {size_t{0}, size_t{2}, size_t{4}, size_t{9}, all.size()}) {
      SCOPED_TRACE(::testing::Message() << compression << " after " << before);
      Iterator it = make().make_iterator();
      for (size_t i = 0; i < before; ++i) ASSERT_TRUE(it.next());
      const std::string saved = it.save_state().dump();
      Iterator restored = make().make_iterator();
      restored.restore_state(json::parse(saved));
      std::vector<std::string> rest;
      while (auto e = restored.next()) rest.push_back(e->string().item());
      EXPECT_EQ(rest, std::vector<std::string>(all.begin() + static_cast<std::ptrdiff_t>(before), all.end()));
    }
    auto shuffled = [&] { return make().shuffle(5, 7).repeat(2).prefetch(2); };
    Iterator it = shuffled().make_iterator();
    for (int i = 0; i < 13; ++i) ASSERT_TRUE(it.next());
    const std::string saved = it.save_state().dump();
    std::vector<std::string> want;
    while (auto e = it.next()) want.push_back(e->string().item());
    Iterator restored = shuffled().make_iterator();
    restored.restore_state(json::parse(saved));
    std::vector<std::string> got;
    while (auto e = restored.next()) got.push_back(e->string().item());
    EXPECT_EQ(got, want);
  }
}

TEST(TFRecordDataset, RestoreIntoChangedFilesIsAClearError) {
  TempDir tmp;
  {
    TFRecordWriter w(tmp / "a.tfrecord");
    for (int i = 0; i < 5; ++i) w.write("record " + std::to_string(i));
  }
  Iterator it = TFRecordDataset({tmp / "a.tfrecord"}).make_iterator();
  for (int i = 0; i < 4; ++i) it.next();
  const json saved = it.save_state();
  TFRecordWriter(tmp / "a.tfrecord").write("short");  // rewritten shorter
  Iterator restored = TFRecordDataset({tmp / "a.tfrecord"}).make_iterator();
  restored.restore_state(saved);
  EXPECT_NE(error_of<DataLossError>([&] { restored.next(); }).find("the file is shorter now"), std::string::npos);
}

TEST(ListFiles, SortedMatchesAndAClearErrorForNone) {
  TempDir tmp;
  for (const char* name : {"b-2.tfrecord", "a-1.tfrecord", "c.txt", "b-10.tfrecord"}) write_bytes(tmp / name, "");
  EXPECT_EQ(list_files(tmp / "*.tfrecord"),
            (std::vector<std::string>{tmp / "a-1.tfrecord", tmp / "b-10.tfrecord", tmp / "b-2.tfrecord"}));
  const std::string msg = error_of<NotFoundError>([&] { list_files(tmp / "*.csv"); });
  EXPECT_NE(msg.find("no files match the pattern \"" + (tmp / "*.csv") + "\""), std::string::npos) << msg;
}

// TensorFlow reads a file our writer made, plain and gzipped: the records' bytes and the Examples in them.
TEST(TFRecordDataset, TensorFlowReadsOurWritersFiles) {
  std::string why;
  const std::string python = lockstep::testing::interop_python("tensorflow", why);
  if (python.empty()) GTEST_SKIP() << why << "; the framing is checked against TensorFlow's golden files";
  TempDir tmp;
  json expected = json::array();
  for (const std::string compression : {"", "GZIP"}) {
    const std::string path = tmp / ("ours" + compression + ".tfrecord");
    TFRecordWriter w(path, {compression});
    for (int i = 0; i < 5; ++i) {
      const std::string record = serialize_example({{"label", std::vector<int64_t>{i, -i}},
                                                    {"x", std::vector<float>{0.5f * static_cast<float>(i)}},
                                                    {"name", std::vector<std::string>{std::string(i, 'n')}}});
      w.write(record);
    }
    w.close();
    expected.push_back({path, compression});
  }
  write_bytes(tmp / "check.py",
              "import json, os, sys\n"
              "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
              "import tensorflow as tf\n"
              "spec = {'label': tf.io.FixedLenFeature([2], tf.int64), 'x': tf.io.FixedLenFeature([], tf.float32),\n"
              "        'name': tf.io.FixedLenFeature([], tf.string)}\n"
              "for path, compression in json.load(open(sys.argv[1])):\n"
              "    got = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(path, compression)]\n"
              "    assert len(got) == 5, len(got)\n"
              "    for i, f in enumerate(got):\n"
              "        assert f['label'].numpy().tolist() == [i, -i], f\n"
              "        assert f['x'].numpy() == 0.5 * i, f\n"
              "        assert f['name'].numpy() == b'n' * i, f\n");
  write_bytes(tmp / "files.json", expected.dump());
  EXPECT_EQ(std::system((python + " " + (tmp / "check.py") + " " + (tmp / "files.json")).c_str()), 0);
}

}  // namespace
}  // namespace lockstep::data
