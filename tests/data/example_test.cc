// parse_single_example / parse_example against what TensorFlow's parsers returned for the golden records
// (tests/golden/make_tfrecord_golden.py), string features as TF's tf.string values, TF's errors for missing, mistyped
// and miscounted features, and the TFRecordDataset(...).map(parse_example_fn(...)) pipelines.
#include "lockstep/data/example.h"

#include <gtest/gtest.h>

#include "lockstep/data/tfrecord.h"
#include "lockstep/tensor/ops.h"
#include "tfrecord_test_util.h"

namespace lockstep::data {
namespace {

using nlohmann::json;
using testing::base64_decode;
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

// TF's string values, {dtype: "string", shape, values (base64)}, as a StringTensor.
StringTensor golden_strings(const json& want) {
  EXPECT_EQ(want.at("dtype"), "string");
  std::vector<std::string> values;
  for (const json& v : want.at("values")) values.push_back(base64_decode(v.get<std::string>()));
  return StringTensor(Shape(want.at("shape").get<std::vector<int64_t>>()), std::move(values));
}

// A numeric dense value against TF's {dtype, shape, values}.
void expect_dense(const Tensor& got, const json& want, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<int64_t> shape = want.at("shape").get<std::vector<int64_t>>();
  const std::string dtype = want.at("dtype");
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
      else if (want.at("dtype") == "string")
        EXPECT_EQ(f.dense_strings.at(key), golden_strings(want)) << what;
      else
        expect_dense(f[key], want, what);
    }
    EXPECT_EQ(f.dense.size() + f.dense_strings.size() + f.sparse.size(), single[i].size());
  }
}

// A string FixedLenFeature is TF's tf.string tensor: a StringTensor of the spec's shape, bytes as they are (the
// golden names end in "\0\xff").
TEST(ParseExample, StringFeatureIsAStringTensor) {
  const auto records = golden_records();
  const ParsedFeatures f = parse_single_example(records[10], golden_spec());
  EXPECT_TRUE(f.dense.count("name") == 0);
  EXPECT_EQ(f.dense_strings.at("name"), StringTensor::scalar(std::string("rec-10\0\xff", 8)));
  EXPECT_EQ(f.dense_strings.at("name"), golden_strings(expected().at("single")[10].at("name")));
  const std::string msg = error_of<ValueError>([&] { (void)f["name"]; });
  EXPECT_NE(msg.find("\"name\" is a string feature, so it is a StringTensor: read it from .dense_strings"),
            std::string::npos)
      << msg;
}

TEST(ParseExample, BatchMatchesTensorFlow) {
  // The names have different lengths ("rec-9", "rec-10"): a string tensor holds them as they are.
  const ParsedFeatures f = parse_example(golden_records(), golden_spec());
  for (const auto& [key, want] : expected().at("batch").items()) {
    if (want.contains("indices"))
      expect_sparse(f.sparse.at(key), want, key);
    else if (want.at("dtype") == "string")
      EXPECT_EQ(f.dense_strings.at(key), golden_strings(want)) << key;
    else
      expect_dense(f[key], want, key);
  }
  EXPECT_EQ(f.dense_strings.at("name").shape.dims(), (std::vector<int64_t>{12}));
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
    auto f = parse_single_example(e.string().item(), spec);
    return Element{f["image"], f["label"]};
  });
  EXPECT_EQ((*pipeline.begin()).x().shape().dims(), (std::vector<int64_t>{2, 3}));
  // A string feature as x: the StringTensor itself.
  const Element named =
      *TFRecordDataset({golden("examples.tfrecord")}).map(parse_example_fn(spec, "name", "label")).begin();
  EXPECT_EQ(named[0].string(), golden_strings(single[0].at("name")));
  EXPECT_EQ(named[1].tensor().to_vector<int64_t>(), (std::vector<int64_t>{-1}));
}

// TF's ds.map(lambda r: tf.io.parse_single_example(r, spec)): a dict element of every feature, which batches.
TEST(ParseExample, ParseExampleFnOfASpecGivesADictElement) {
  FeatureSpec spec = golden_spec();
  for (const char* key : {"tags", "scores", "words"}) spec.erase(key);
  const json& single = expected().at("single");
  int64_t i = 0;
  for (const Element& e : TFRecordDataset({golden("examples.tfrecord")}).map(parse_example_fn(spec))) {
    SCOPED_TRACE(i);
    ASSERT_EQ(e.structure(), "{'image': float32, 'label': int64, 'name': string, 'weight': float32}");
    expect_dense(e["image"].tensor(), single[i].at("image"), "image");
    expect_dense(e["label"].tensor(), single[i].at("label"), "label");
    expect_dense(e["weight"].tensor(), single[i].at("weight"), "weight");
    EXPECT_EQ(e["name"].string(), golden_strings(single[i].at("name")));
    ++i;
  }
  EXPECT_EQ(i, 12);
  const Element batch =
      *TFRecordDataset({golden("examples.tfrecord.gz")}, {"GZIP"}).map(parse_example_fn(spec)).batch(12).begin();
  EXPECT_EQ(batch.str(),
            "{'image': float32 (12, 2, 3), 'label': int64 (12,), 'name': string (12,), 'weight': float32 (12,)}");
  EXPECT_EQ(batch["name"].string(), golden_strings(expected().at("batch").at("name")));
  // A VarLenFeature has no place in an element.
  const std::string msg = error_of<InvalidArgumentError>([] { parse_example_fn(golden_spec()); });
  EXPECT_NE(msg.find("parse_example_fn: feature \"scores\" is a VarLenFeature"), std::string::npos) << msg;
  EXPECT_NE(msg.find("use a FixedLenFeature"), std::string::npos) << msg;
}

// parse_example_fn reads string scalars; anything else names what it got.
TEST(ParseExample, ParseExampleFnRefusesAnElementThatIsNoStringScalar) {
  const FeatureSpec spec = {{"label", FixedLenFeature{{}, DType::int64}}};
  std::string msg = error_of<InvalidArgumentError>([&] {
    for (const Element& e : Dataset::range(0, 3).map(parse_example_fn(spec))) (void)e;
  });
  EXPECT_NE(msg.find("parse_example_fn: a record is a string scalar (an element of TFRecordDataset), got int64 ()"),
            std::string::npos)
      << msg;
  msg = error_of<InvalidArgumentError>([&] {
    for (const Element& e :
         TFRecordDataset({golden("examples.tfrecord")}).batch(2).map(parse_example_fn(spec, "label")))
      (void)e;
  });
  EXPECT_NE(msg.find("got string (2,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parse_example"), std::string::npos) << msg;
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
  EXPECT_NE(msg.find("feature \"image\" holds float32 (FloatList) values but the spec asks for string"),
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

TEST(ParseExample, DefaultsStringsAndSparseToDense) {
  const std::string a =
      serialize_example({{"v", std::vector<int64_t>{5, 6}}, {"s", std::vector<std::string>{"abc", "xy"}}});
  const std::string b = serialize_example({});
  const FeatureSpec spec = {{"v", VarLenFeature{DType::int64}},
                            {"d", FixedLenFeature{{2}, DType::float32, full({2}, 0.5)}},
                            {"s", FixedLenFeature{{2}, kString, StringTensor::scalar("none")}}};
  const ParsedFeatures one = parse_single_example(a, spec);
  EXPECT_EQ(one.dense_strings.at("s"), StringTensor(Shape({2}), {"abc", "xy"}));
  EXPECT_EQ(one["d"].to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
  const ParsedFeatures batch = parse_example(std::vector<std::string>{a, b, a}, spec);
  EXPECT_EQ(sparse_to_dense(batch.sparse.at("v"), -1).to_vector<int64_t>(), (std::vector<int64_t>{5, 6, -1, -1, 5, 6}));
  EXPECT_EQ(batch["d"].shape().dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(batch.dense_strings.at("s"), StringTensor(Shape({3, 2}), {"abc", "xy", "none", "none", "abc", "xy"}));
  // A default of one value per element; a required string feature; a default of the wrong kind or count.
  const ParsedFeatures two =
      parse_single_example(b, {{"s", FixedLenFeature{{2}, kString, StringTensor(Shape({2}), {"p", "q"})}}});
  EXPECT_EQ(two.dense_strings.at("s").values, (std::vector<std::string>{"p", "q"}));
  std::string msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(b, {{"s", FixedLenFeature{{}, kString}}});
  });
  EXPECT_NE(msg.find("feature \"s\" (string) is required"), std::string::npos) << msg;
  msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(b, {{"s", FixedLenFeature{{}, kString, scalar(0)}}});
  });
  EXPECT_NE(msg.find("feature \"s\" is string, so its default_value must be a StringTensor, got float32 ()"),
            std::string::npos)
      << msg;
  msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(b, {{"n", FixedLenFeature{{}, DType::int64, StringTensor::scalar("1")}}});
  });
  EXPECT_NE(msg.find("feature \"n\" is int64, so its default_value must be a Tensor, got string ()"), std::string::npos)
      << msg;
  msg = error_of<InvalidArgumentError>([&] {
    parse_single_example(b, {{"s", FixedLenFeature{{3}, kString, StringTensor(Shape({2}), {"p", "q"})}}});
  });
  EXPECT_NE(msg.find("has shape (3,) (3 values) but its default_value has 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lockstep::data
