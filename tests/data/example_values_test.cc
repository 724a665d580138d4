// The messages of tf.train.Example as values (serialize_* / parse_* / example_message_text) against the bytes and
// text TensorFlow wrote for them (tests/golden/make_example_golden.py), and the kinds, presence and errors the
// Python classes of tf.train rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "lockstep/data/example.h"
#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using nlohmann::json;
using testing::base64_decode;
using testing::error_of;
using testing::read_bytes;

// The golden message `name`: {type, wire (bytes), text}.
struct Golden {
  std::string type, wire, text;
};
Golden golden_message(const std::string& name) {
  static const json j =
      json::parse(read_bytes(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/golden/example_messages.json"));
  for (const json& m : j.at("messages"))
    if (m.at("name") == name) return {m.at("type"), base64_decode(m.at("wire").get<std::string>()), m.at("text")};
  ADD_FAILURE() << "no golden message " << name;
  return {};
}

// The serialized bytes of message `type` parsed and written again.
std::string round_trip(const std::string& type, const std::string& wire) {
  if (type == "Example") return serialize_example_message(parse_example_message(wire));
  if (type == "Features") return serialize_features(parse_features(wire));
  if (type == "Feature") return serialize_feature(parse_feature(wire));
  const FeatureDType dtype = type == "Int64List" ? DType::int64 : type == "FloatList" ? DType::float32 : kString;
  return serialize_feature_list(parse_feature_list(wire, dtype));
}

// TF prints a map in its own order and lockstep in key order: compare the lines as a multiset.
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(ExampleValues, EveryGoldenMessageRoundTripsToTensorFlowsBytesAndText) {
  for (const char* name :
       {"example", "example_empty_features", "example_empty", "features", "feature_no_kind", "feature_empty_bytes",
        "feature_empty_floats", "feature_empty_ints", "feature_ints", "float_list", "int64_list", "bytes_list"}) {
    SCOPED_TRACE(name);
    const Golden g = golden_message(name);
    EXPECT_EQ(round_trip(g.type, g.wire), g.wire);
    const std::string text = example_message_text(g.type, g.wire);
    if (g.type == "Example" || g.type == "Features")
      EXPECT_EQ(sorted_lines(text), sorted_lines(g.text));
    else
      EXPECT_EQ(text, g.text);
  }
}

TEST(ExampleValues, ValuesGiveTensorFlowsBytes) {
  const ExampleFeatures features = {
      {"label", std::vector<int64_t>{int64_t{1} << 40, -1}},
      {"image", std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f}},
      {"name", std::vector<std::string>{std::string("rec-1\0\xff", 7)}},
      {"empty_bytes", std::vector<std::string>{}},
      {"empty_floats", std::vector<float>{}},
      {"empty_ints", std::vector<int64_t>{}},
      {"no_kind", std::nullopt},
      {"cl\xc3\xa9", std::vector<int64_t>{7}},
  };
  EXPECT_EQ(serialize_features(features), golden_message("features").wire);
  EXPECT_EQ(serialize_example_message(features), golden_message("example").wire);
  EXPECT_EQ(serialize_example_message(std::nullopt), "");
  EXPECT_EQ(serialize_example_message(ExampleFeatures{}), golden_message("example_empty_features").wire);
  EXPECT_EQ(serialize_feature(std::nullopt), "");
  EXPECT_EQ(serialize_feature(std::vector<std::string>{}), golden_message("feature_empty_bytes").wire);
  EXPECT_EQ(serialize_feature_list(std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                                        std::numeric_limits<int64_t>::max(), 0, -1, 300}),
            golden_message("int64_list").wire);
  // serialize_example, TFRecordWriter's: an empty bytes list keeps its kind too.
  EXPECT_EQ(parse_example_message(serialize_example({{"b", std::vector<std::string>{}}}))->at("b"),
            ExampleFeature(std::vector<std::string>{}));
}

TEST(ExampleValues, ParsingKeepsKindsAndPresence) {
  const ExampleFeatures parsed = *parse_example_message(golden_message("example").wire);
  EXPECT_EQ(parsed.size(), 8u);
  EXPECT_FALSE(parsed.at("no_kind").has_value());
  EXPECT_EQ(parsed.at("empty_floats"), ExampleFeature(std::vector<float>{}));
  EXPECT_EQ(parsed.at("label"), ExampleFeature(std::vector<int64_t>{int64_t{1} << 40, -1}));
  EXPECT_FALSE(parse_example_message("").has_value());
  EXPECT_TRUE(parse_example_message(golden_message("example_empty_features").wire)->empty());
  const auto floats =
      std::get<std::vector<float>>(parse_feature_list(golden_message("float_list").wire, DType::float32));
  ASSERT_EQ(floats.size(), 11u);
  EXPECT_EQ(floats[0], 0.1f);
  EXPECT_TRUE(std::signbit(floats[3]));
  EXPECT_EQ(floats[10], -std::numeric_limits<float>::infinity());
}

TEST(ExampleValues, ParsingMergesAsProtobufDoes) {
  // Unpacked int64s (field 1, varint) and two packed runs concatenate; a later kind replaces an earlier one.
  EXPECT_EQ(parse_feature_list(std::string("\x08\x01\x0a\x02\x02\x03\x08\x04", 8), DType::int64),
            FeatureValues(std::vector<int64_t>{1, 2, 3, 4}));
  const std::string ints = golden_message("feature_ints").wire, bytes = golden_message("feature_empty_bytes").wire;
  EXPECT_EQ(parse_feature(ints + bytes), ExampleFeature(std::vector<std::string>{}));
  const std::string one = serialize_features({{"a", std::vector<float>{1}}, {"b", std::vector<float>{2}}});
  const std::string other = serialize_features({{"a", std::vector<int64_t>{5}}});
  const ExampleFeatures merged = parse_features(one + other);
  EXPECT_EQ(merged.at("a"), ExampleFeature(std::vector<int64_t>{5}));
  EXPECT_EQ(merged.at("b"), ExampleFeature(std::vector<float>{2}));
}

TEST(ExampleValues, BadBytesAreDataLossErrorsThatNameTheMessage) {
  const std::string truncated = {'\x0a', '\x05', 'a', 'b'};  // features of 5 bytes, 2 of them there
  std::string msg = error_of<DataLossError>([&] { parse_example_message(truncated); });
  EXPECT_NE(msg.find("tf.train.Example"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 bytes"), std::string::npos) << msg;
  msg = error_of<DataLossError>([] { parse_feature_list(std::string("\x0a\x05", 2), kString); });
  EXPECT_NE(msg.find("tf.train.BytesList"), std::string::npos) << msg;
  msg = error_of<DataLossError>([] { example_message_text("Feature", "\xff"); });
  EXPECT_NE(msg.find("tf.train.Feature"), std::string::npos) << msg;
  msg = error_of<InvalidArgumentError>([] { parse_feature_list("", DType::int32); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  msg = error_of<InvalidArgumentError>([] { example_message_text("SequenceExample", ""); });
  EXPECT_NE(msg.find("SequenceExample"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lockstep::data
