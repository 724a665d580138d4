// parse_single_example / parse_example against what TensorFlow's parsers returned for the golden records
// (tests/golden/make_tfrecord_golden.py), TF's errors for missing, mistyped and miscounted features, and the
// TFRecordDataset(...).map(parse_example_fn(...)) pipeline.
#include "lockstep/data/example.h"

#include <gtest/gtest.h>

#include "lockstep/data/tfrecord.h"
#include "lockstep/tensor/ops.h"
#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using nlohmann::json;
using testing::base64_decode;
using testing::bytes_of;
using testing::error_of;
using testing::expected;
using testing::golden;

// The spec of make_tfrecord_golden.py.
FeatureSpec golden_spec() {
  return {{"label", FixedLenFeature{{}, DType::int64}},
          {"image", FixedLenFeature{{2, 3}, DType::float32}},
          {"name", FixedLenFeature{{}, kString}},
          {"weight", FixedLenFeature{{}, DType::float32, scalar(-1.0)}},
          {"tags", VarLenFeature{DType::int64}},
          {"scores", VarLenFeature{DType::float32}},
          {"words", VarLenFeature{kString}}};
}

std::vector<std::string> golden_records() {
  std::vector<std::string> out;
  for (const json& r : expected().at("records")) out.push_back(base64_decode(r.get<std::string>()));
  return out;
}

// A dense value against TF's {dtype, shape, values}. TF's string tensors: a scalar string becomes its bytes
// ([length]), a batch of strings [batch, length].
void expect_dense(const Tensor& got, const json& want, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<int64_t> shape = want.at("shape").get<std::vector<int64_t>>();
  const std::string dtype = want.at("dtype");
  if (dtype == "string") {
    std::string all;
    size_t length = 0;
    for (const json& v : want.at("values")) {
      const std::string s = base64_decode(v.get<std::string>());
      length = s.size();
      all += s;
    }
    shape.push_back(static_cast<int64_t>(length));
    ASSERT_EQ(got.dtype(), DType::uint8);
    EXPECT_EQ(got.shape().dims(), shape);
    EXPECT_EQ(bytes_of(got), all);
    return;
  }
  EXPECT_EQ(std::string(dtype_name(got.dtype())), dtype);
  EXPECT_EQ(got.shape().dims(), shape);
  if (dtype == "float32") {
    std::vector<float> w;
    for (const json& v : want.at("values")) w.push_back(static_cast<float>(v.get<double>()));
    EXPECT_EQ(got.to_vector<float>(), w);  // exact: both are TF's float32 values
  } else {
    EXPECT_EQ(got.to_vector<int64_t>(), want.at("values").get<std::vector<int64_t>>());
  }
}

void expect_sparse(const SparseTensor& got, const json& want, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<int64_t> indices;
  for (const json& row : want.at("indices"))
    for (const json& i : row) indices.push_back(i.get<int64_t>());
  const auto dense_shape = want.at("dense_shape").get<std::vector<int64_t>>();
  EXPECT_EQ(got.indices.to_vector<int64_t>(), indices);
  EXPECT_EQ(got.indices.shape().dims(), (std::vector<int64_t>{static_cast<int64_t>(indices.size() / dense_shape.size()),
                                                              static_cast<int64_t>(dense_shape.size())}));
  EXPECT_EQ(got.dense_shape.to_vector<int64_t>(), dense_shape);
  const json& values = want.at("values");
  if (values.at("dtype") == "string") {
    std::vector<std::string> w;
    for (const json& v : values.at("values")) w.push_back(base64_decode(v.get<std::string>()));
    EXPECT_EQ(got.string_values, w);
    EXPECT_FALSE(got.values.defined());
  } else {
    expect_dense(got.values, values, what + " values");
  }
}

TEST(ParseExample, SingleExamplesMatchTensorFlow) {
  const auto records = golden_records();
  const json& single = expected().at("single");
  for (size_t i = 0; i < records.size(); ++i) {
    const ParsedFeatures f = parse_single_example(records[i], golden_spec());
    for (const auto& [key, want] : single[i].items()) {
      const std::string what = "record " + std::to_string(i) + " feature " + key;
      if (want.contains("indices"))
        expect_sparse(f.sparse.at(key), want, what);
      else
        expect_dense(f[key], want, what);
    }
  }
}

TEST(ParseExample, BatchMatchesTensorFlow) {
  FeatureSpec spec = golden_spec();
  spec.erase("name");  // names of different lengths have no uint8 form as a batch (DefaultsBytesAndSparseToDense)
  const ParsedFeatures f = parse_example(golden_records(), spec);
  for (const auto& [key, want] : expected().at("batch").items()) {
    if (key == "name") continue;
    if (want.contains("indices"))
      expect_sparse(f.sparse.at(key), want, key);
    else
      expect_dense(f[key], want, key);
  }
}

TEST(ParseExample, ReadsTheGoldenFileThroughMap) {
  const FeatureSpec spec = golden_spec();
  // The typical pipeline: records -> (x, y) -> batches.
  const Dataset ds = TFRecordDataset({golden("examples.tfrecord.gz")}, {"GZIP"})
                         .map(parse_example_fn(spec, "image", "label", "weight"))
                         .batch(4);
  const json& single = expected().at("single");
  int64_t i = 0;
  for (const Element& b : ds) {
    ASSERT_EQ(b.x().shape().dims(), (std::vector<int64_t>{4, 2, 3}));
    ASSERT_EQ(b.y().shape().dims(), (std::vector<int64_t>{4}));
    for (int64_t k = 0; k < 4; ++k, ++i) {
      EXPECT_EQ(b.y().to_vector<int64_t>()[k], single[i].at("label").at("values")[0].get<int64_t>());
      EXPECT_EQ(b.sample_weight().to_vector<float>()[k],
                static_cast<float>(single[i].at("weight").at("values")[0].get<double>()));
    }
  }
  EXPECT_EQ(i, 12);
  // The same with a lambda, as TF users write it.
  auto pipeline = TFRecordDataset({golden("examples.tfrecord")}).map([&](const Element& e) {
    auto f = parse_single_example(e.x(), spec);
    return Element{f["image"], f["label"]};
  });
  EXPECT_EQ((*pipeline.begin()).x().shape().dims(), (std::vector<int64_t>{2, 3}));
}

TEST(ParseExample, ErrorsNameTheFeature) {
  const std::string record =
      serialize_example({{"label", std::vector<int64_t>{1}}, {"image", std::vector<float>{1, 2, 3, 4}}});
  // Missing and required.
  std::string msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(record, {{"klass", FixedLenFeature{{}, DType::int64}}});
  });
  EXPECT_NE(msg.find("feature \"klass\" (int64) is required but the example does not have it (it has: image, label)"),
            std::string::npos)
      << msg;
  // Of another type.
  msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(record, {{"label", FixedLenFeature{{}, DType::float32}}});
  });
  EXPECT_NE(msg.find("feature \"label\" holds int64 (Int64List) values but the spec asks for float32"),
            std::string::npos)
      << msg;
  msg = error_of<InvalidArgumentError>([&] { parse_single_example(record, {{"image", VarLenFeature{kString}}}); });
  EXPECT_NE(msg.find("feature \"image\" holds float32 (FloatList) values but the spec asks for kString"),
            std::string::npos)
      << msg;
  // The wrong number of values.
  msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(record, {{"image", FixedLenFeature{{2, 3}, DType::float32}}});
  });
  EXPECT_NE(msg.find("feature \"image\" has 4 value(s) but its FixedLenFeature of shape (2, 3) expects 6"),
            std::string::npos)
      << msg;
  // In a batch, the example's index too.
  msg = error_of<InvalidArgumentError>([&] {
    parse_example(std::vector<std::string>{record, serialize_example({})},
                  {{"label", FixedLenFeature{{}, DType::int64}}});
  });
  EXPECT_NE(msg.find("parse_example: example 1, feature \"label\""), std::string::npos) << msg;
  // Not an Example at all; an unsupported dtype; a VarLen feature read as dense.
  msg = error_of<InvalidArgumentError>([&] { parse_single_example(std::string("\xff\xff\xff"), {}); });
  EXPECT_NE(msg.find("not a serialized tf.train.Example"), std::string::npos) << msg;
  msg = error_of<InvalidArgumentError>([&] { parse_single_example(record, {{"x", VarLenFeature{DType::float64}}}); });
  EXPECT_NE(msg.find("asks for float64"), std::string::npos) << msg;
  const ParsedFeatures f = parse_single_example(record, {{"image", VarLenFeature{DType::float32}}});
  msg = error_of<ValueError>([&] { (void)f["image"]; });
  EXPECT_NE(msg.find("is a VarLenFeature"), std::string::npos) << msg;
}

TEST(ParseExample, DefaultsBytesAndSparseToDense) {
  const std::string a =
      serialize_example({{"v", std::vector<int64_t>{5, 6}}, {"s", std::vector<std::string>{"abc", "xyz"}}});
  const std::string b = serialize_example({});
  FeatureSpec spec = {{"v", VarLenFeature{DType::int64}},
                      {"d", FixedLenFeature{{2}, DType::float32, full({2}, 0.5)}},
                      {"s", FixedLenFeature{{2}, kString, Tensor()}}};
  const ParsedFeatures one =
      parse_single_example(a, {{"s", FixedLenFeature{{2}, kString}}, {"d", std::get<FixedLenFeature>(spec["d"])}});
  const std::string msg = error_of<InvalidArgumentError>([&] {
    parse_example(std::vector<std::string>{serialize_example({{"s", std::vector<std::string>{"ab"}}}),
                                           serialize_example({{"s", std::vector<std::string>{"abc"}}})},
                  {{"s", FixedLenFeature{{}, kString}}});
  });
  EXPECT_NE(msg.find("feature \"s\" holds byte strings of different lengths (2 and 3)"), std::string::npos) << msg;
  EXPECT_EQ(one["s"].shape().dims(), (std::vector<int64_t>{2, 3}));  // two strings of length 3
  EXPECT_EQ(bytes_of(one["s"]), "abcxyz");
  EXPECT_EQ(one["d"].to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
  spec.erase("s");
  const ParsedFeatures batch = parse_example(std::vector<std::string>{a, b, a}, spec);
  EXPECT_EQ(sparse_to_dense(batch.sparse.at("v"), -1).to_vector<int64_t>(), (std::vector<int64_t>{5, 6, -1, -1, 5, 6}));
  EXPECT_EQ(batch["d"].shape().dims(), (std::vector<int64_t>{3, 2}));
}

}  // namespace
}  // namespace lockstep::data
