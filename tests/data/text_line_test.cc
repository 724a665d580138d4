// TextLineDataset: lines as TF splits them, string scalars that batch and shard by file, a resumable position, and
// one-line errors for missing files and bad options.
#include "lockstep/data/text_line.h"

#include "lockstep/data/dataset_node.h"
#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using testing::error_of;
using testing::records_of;
using testing::TempDir;
using testing::write_bytes;

TEST(TextLineDataset, SplitsLinesAsTensorFlow) {
  TempDir tmp;
  write_bytes(tmp / "a.txt", "first\nsecond\r\n\nlast without newline");
  write_bytes(tmp / "empty.txt", "");
  write_bytes(tmp / "b.txt", std::string("\n\xff\0 bytes\n", 10));
  const std::vector<std::string> want = {"first", "second", "", "last without newline", "", std::string("\xff\0 bytes", 8)};
  EXPECT_EQ(records_of(TextLineDataset({tmp / "a.txt", tmp / "empty.txt", tmp / "b.txt"})), want);
  EXPECT_EQ(TextLineDataset({tmp / "a.txt"}).cardinality(), kUnknownCardinality);
}

TEST(TextLineDataset, LinesAreStringScalarsThatBatch) {
  TempDir tmp;
  write_bytes(tmp / "a.txt", "x\nyy\nzzz\n");
  const Element batch = *TextLineDataset({tmp / "a.txt"}).batch(2).begin();
  ASSERT_TRUE(batch.is_string());
  EXPECT_EQ(batch.string().shape, Shape({2}));
  EXPECT_EQ(batch.string().values, (std::vector<std::string>{"x", "yy"}));
}

TEST(TextLineDataset, RestoredIteratorResumesMidFile) {
  TempDir tmp;
  write_bytes(tmp / "a.txt", "0\n1\n2\n3\n");
  write_bytes(tmp / "b.txt", "4\n5\n");
  const Dataset ds = TextLineDataset({tmp / "a.txt", tmp / "b.txt"});
  for (int taken = 0; taken <= 6; ++taken) {
    Iterator it = ds.make_iterator();
    for (int i = 0; i < taken; ++i) it.next();
    Iterator again = ds.make_iterator();
    again.restore_state(it.save_state());
    std::vector<std::string> rest;
    while (auto e = again.next()) rest.push_back(e->string().item());
    std::vector<std::string> want;
    for (int i = taken; i < 6; ++i) want.push_back(std::to_string(i));
    EXPECT_EQ(rest, want) << "after " << taken;
  }
}

TEST(TextLineDataset, ShardsByFile) {
  TempDir tmp;
  write_bytes(tmp / "a.txt", "a\n");
  write_bytes(tmp / "b.txt", "b\n");
  const Dataset ds = TextLineDataset({tmp / "a.txt", tmp / "b.txt"});
  EXPECT_EQ(ds.node().files(), (std::vector<std::string>{tmp / "a.txt", tmp / "b.txt"}));
  EXPECT_EQ(records_of(Dataset(ds.node().with_files({tmp / "b.txt"}))), std::vector<std::string>{"b"});
}

TEST(TextLineDataset, BadInputIsOneLineErrorNamingIt) {
  TempDir tmp;
  const std::string missing = tmp / "missing.txt";
  EXPECT_NE(error_of<NotFoundError>([&] { records_of(TextLineDataset({missing})); }).find(missing), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([] { TextLineDataset({"x"}, {"ZLIB"}); }).find("\"ZLIB\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([] { TextLineDataset({""}); }).find("a file name is empty"),
            std::string::npos);
  write_bytes(tmp / "plain.txt", "not gzip\n");
  EXPECT_NE(error_of<DataLossError>([&] { records_of(TextLineDataset({tmp / "plain.txt"}, {"GZIP"})); })
                .find("is not gzip-compressed"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::data
