// make_csv_dataset against TensorFlow's batches of the golden CSV (quoted fields with commas, doubled quotes and a
// line break; an empty field), TF's repeat/shuffle/batch semantics, errors naming file, line and column, GZIP, and
// resuming mid-file from a saved state.
#include "lockstep/data/csv.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>

#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using experimental::CsvOptions;
using experimental::make_csv_dataset;
using nlohmann::json;
using testing::error_of;
using testing::golden;
using testing::TempDir;
using testing::write_bytes;

CsvOptions golden_options() {
  CsvOptions o;
  o.label_name = "label";
  o.select_columns = {"x1", "x2", "label", "x3"};
  o.num_epochs = 1;
  o.shuffle = false;
  return o;
}

TEST(MakeCsvDataset, MatchesTensorFlowsBatches) {
  const json& want = testing::expected().at("csv");
  const Dataset ds = make_csv_dataset(golden("rows.csv"), want.at("batch_size").get<int64_t>(), golden_options());
  size_t i = 0;
  for (const Element& b : ds) {
    ASSERT_LT(i, want.at("batches").size());
    const json& w = want.at("batches")[i++];
    EXPECT_EQ(b.x().dtype(), DType::float32);
    EXPECT_EQ(b.x().shape().dims(), w.at("x").at("shape").get<std::vector<int64_t>>());
    std::vector<float> x;
    for (const json& v : w.at("x").at("values")) x.push_back(static_cast<float>(v.get<double>()));
    EXPECT_EQ(b.x().to_vector<float>(), x);
    EXPECT_EQ(std::string(dtype_name(b.y().dtype())), w.at("y").at("dtype").get<std::string>());  // int32, as TF infers
    EXPECT_EQ(b.y().to_vector<int64_t>(), w.at("y").at("values").get<std::vector<int64_t>>());
  }
  EXPECT_EQ(i, want.at("batches").size());
}

// TF's defaults: repeat forever with full batches only, shuffled by a seeded buffer.
TEST(MakeCsvDataset, RepeatsForeverWithFullBatchesAndShuffles) {
  CsvOptions o = golden_options();
  o.num_epochs = -1;
  const Dataset forever = make_csv_dataset(golden("rows.csv"), 3, o);
  std::vector<int64_t> labels;
  for (const Element& b : forever.take(7)) {
    ASSERT_EQ(b.x().dim(0), 3);
    for (int64_t v : b.y().to_vector<int64_t>()) labels.push_back(v);
  }
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 1, 0, 2, 1, 0, 1, 2, 1, 0, 2, 1, 0, 1, 2, 1, 0, 2, 1}));
  o.num_epochs = 2;
  o.shuffle = true;
  o.shuffle_seed = 3;
  auto firsts = [&] {
    std::vector<float> out;
    for (const Element& b : make_csv_dataset(golden("rows.csv"), 2, o))
      for (int64_t r = 0; r < b.x().dim(0); ++r) out.push_back(b.x().to_vector<float>()[static_cast<size_t>(r * 3)]);
    return out;
  };
  const std::vector<float> a = firsts(), b = firsts();
  EXPECT_EQ(a, b);  // seeded
  ASSERT_EQ(a.size(), 14u);
  std::vector<float> epoch(a.begin(), a.begin() + 7);
  EXPECT_NE(epoch, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
  std::sort(epoch.begin(), epoch.end());
  EXPECT_EQ(epoch, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
}

TEST(MakeCsvDataset, ColumnErrorsListTheColumns) {
  CsvOptions o = golden_options();
  o.label_name = "target";
  std::string msg = error_of<ValueError>([&] { make_csv_dataset(golden("rows.csv"), 2, o); });
  EXPECT_NE(msg.find("label_name \"target\" is not a column; the columns are: id, note, x1, x2, label, x3"),
            std::string::npos)
      << msg;
  o.select_columns = {"x1", "x9"};
  msg = error_of<ValueError>([&] { make_csv_dataset(golden("rows.csv"), 2, o); });
  EXPECT_NE(msg.find("select_columns entry \"x9\" is not a column; the columns are: id, note"), std::string::npos)
      << msg;
  o.select_columns.clear();
  // A text column among the features.
  o.label_name = "label";
  msg = error_of<ValueError>([&] { make_csv_dataset(golden("rows.csv"), 2, o); });
  EXPECT_NE(msg.find("column \"note\" holds text (\"plain\" at " + golden("rows.csv") + ":2)"), std::string::npos)
      << msg;
  EXPECT_NE(error_of<NotFoundError>([&] { make_csv_dataset(golden("*.nothing"), 2, o); }).find("no files match"),
            std::string::npos);
}

TEST(MakeCsvDataset, MalformedRowsNameFileLineAndColumn) {
  TempDir tmp;
  CsvOptions o;
  o.label_name = "y";
  o.num_epochs = 1;
  o.shuffle = false;
  o.num_rows_for_inference = 1;  // so that the bad rows are met while reading, not while inferring
  auto error_reading = [&](const std::string& csv) {
    write_bytes(tmp / "bad.csv", csv);
    return error_of<DataLossError>([&] {
      for (const Element& e : make_csv_dataset(tmp / "bad.csv", 1, o)) (void)e;
    });
  };
  std::string msg = error_reading("a,b,y\n1,2,3\n4,5\n");
  EXPECT_NE(msg.find("malformed row at " + (tmp / "bad.csv") + ":3: expected 3 fields (a, b, y), got 2"),
            std::string::npos)
      << msg;
  msg = error_reading("a,b,y\n1,2,3\n4,x\"y,6\n");
  EXPECT_NE(msg.find((tmp / "bad.csv") + ":3, column 2 (\"b\"): a quote inside an unquoted field"), std::string::npos)
      << msg;
  msg = error_reading("a,b,y\n1,2,3\n\"4\"x,5,6\n");
  EXPECT_NE(msg.find(":3, column 1 (\"a\"): unexpected 'x' after a quoted field's closing quote"), std::string::npos)
      << msg;
  msg = error_reading("a,b,y\n1,2,3\n\n4,abc,6\n");  // a blank line is skipped but counted
  EXPECT_NE(msg.find(":4, column 2 (\"b\"): \"abc\" is not a number"), std::string::npos) << msg;
  msg = error_reading("a,b,y\n1,2,3\n4,\"5\n");
  EXPECT_NE(msg.find("a quoted field is not closed before the end of the file"), std::string::npos) << msg;
  o.column_defaults = {0.0, std::nullopt, 0.0};
  msg = error_reading("a,b,y\n1,2,3\r\n4,,6\r\n");
  EXPECT_NE(msg.find(":3, column 2 (\"b\"): the field is empty and the column has no default"), std::string::npos)
      << msg;
}

TEST(MakeCsvDataset, ReadsGzipAndResumesMidFile) {
  TempDir tmp;
  std::string csv = "f1;f2;label\n";
  for (int i = 0; i < 20; ++i)
    csv += std::to_string(i) + ";\"" + std::to_string(i * 0.5) + "\";" + std::to_string(i % 4) + "\n";
  gzFile gz = gzopen((tmp / "a.csv.gz").c_str(), "wb");
  gzwrite(gz, csv.data(), static_cast<unsigned>(csv.size()));
  gzclose(gz);
  write_bytes(tmp / "b.csv", csv);
  CsvOptions o;
  o.label_name = "label";
  o.field_delim = ';';
  o.num_epochs = 1;
  o.shuffle = false;
  for (const std::string compression : {"", "GZIP"}) {
    o.compression_type = compression;
    const std::string pattern = tmp / (compression.empty() ? "b.csv" : "a.csv.gz");
    auto make = [&] { return make_csv_dataset(pattern, 3, o); };
    Iterator it = make().make_iterator();
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(it.next());
    const std::string saved = it.save_state().dump();
    std::vector<std::vector<float>> want;
    while (auto b = it.next()) want.push_back(b->x().to_vector<float>());
    ASSERT_EQ(want.size(), 5u);  // 20 rows: 7 batches, the last of 2
    EXPECT_EQ(want[0][0], 6.0f);
    EXPECT_EQ(want[0][1], 3.0f);
    Iterator restored = make().make_iterator();
    restored.restore_state(json::parse(saved));
    std::vector<std::vector<float>> got;
    while (auto b = restored.next()) got.push_back(b->x().to_vector<float>());
    EXPECT_EQ(got, want) << compression;
  }
  o.compression_type = "";
  EXPECT_NE(error_of<DataLossError>([&] {
              make_csv_dataset(tmp / "a.csv.gz", 3, o);
            }).find("is gzip-compressed; pass compression_type \"GZIP\""),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::data
