// tf.train.Example parsing (tf.io.parse_single_example / tf.io.parse_example): a FeatureSpec maps feature keys to
// FixedLenFeature (a dense tensor of a fixed shape) or VarLenFeature (a SparseTensor), for int64, float32 and
// bytes features; serialize_example writes the same format.
//
// Strings: lockstep has no string dtype. A bytes feature is asked for with dtype kString (= DType::uint8), and
// where TF returns a tf.string tensor this returns its bytes as uint8: a scalar bytes value becomes a 1-D uint8
// tensor [length]; a FixedLen bytes feature of shape S becomes [S..., length] when its values have one length
// (else InvalidArgumentError); a VarLen bytes feature's values are in SparseTensor::string_values.
//
// Typical use:
//   data::FeatureSpec spec = {{"image", data::FixedLenFeature{{28, 28}, DType::float32}},
//                             {"label", data::FixedLenFeature{{}, DType::int64}}};
//   auto ds = data::TFRecordDataset(files).map(data::parse_example_fn(spec, "image", "label")).batch(64);
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data {

// TF's tf.string in a feature spec: bytes features come back as uint8 tensors (see above).
inline constexpr DType kString = DType::uint8;

// A feature with `shape` values of `dtype` (int64, float32 or kString) in every example. default_value (a scalar,
// broadcast, or as many values as the shape holds) stands in when an example lacks the feature; left undefined,
// the feature is required.
struct FixedLenFeature {
  std::vector<int64_t> shape = {};
  DType dtype = DType::float32;
  Tensor default_value = {};
};

// A feature with any number of values (0 included) of `dtype`; parsed into a SparseTensor.
struct VarLenFeature {
  DType dtype = DType::float32;
};

using FeatureSpec = std::map<std::string, std::variant<FixedLenFeature, VarLenFeature>>;

// tf.sparse.SparseTensor: the values at `indices` of a tensor of shape `dense_shape`, the rest zero.
// indices: int64 [n, rank]; values: [n] of the feature's dtype; dense_shape: int64 [rank]. For a bytes feature,
// values is undefined and string_values holds the n byte strings (TF's tf.string values).
struct SparseTensor {
  Tensor indices;
  Tensor values;
  Tensor dense_shape;
  std::vector<std::string> string_values;
};

// tf.sparse.to_dense for int64 and float32 values: default_value fills the positions that hold no value.
Tensor sparse_to_dense(const SparseTensor& sparse, double default_value = 0);

// What parse_single_example / parse_example return: dense values of the FixedLenFeatures, sparse ones of the
// VarLenFeatures (TF returns both in one dict).
struct ParsedFeatures {
  std::map<std::string, Tensor> dense;
  std::map<std::string, SparseTensor> sparse;
  // dense.at(key), with an error that names the key and the features there are.
  const Tensor& operator[](const std::string& key) const;
};

// One serialized Example (a record of TFRecordDataset: a 1-D uint8 tensor, TF's string scalar). Dense values
// have the spec's shape; VarLen ones are SparseTensors of rank 1. Errors as TF's: a required feature that is
// missing names the key; a feature of another type names the key and both types; a FixedLen feature with the wrong
// number of values names the key, the expected and the actual count (InvalidArgumentError for all three).
ParsedFeatures parse_single_example(const Tensor& serialized, const FeatureSpec& features);
ParsedFeatures parse_single_example(std::string_view serialized, const FeatureSpec& features);
// A batch of serialized Examples (TF: a 1-D string tensor). Dense values get a leading batch axis; VarLen ones are
// SparseTensors of rank 2 whose dense_shape is [batch, longest list].
ParsedFeatures parse_example(const std::vector<Tensor>& serialized, const FeatureSpec& features);
ParsedFeatures parse_example(const std::vector<std::string>& serialized, const FeatureSpec& features);

// A map() function for TFRecordDataset: parses each record with `features` and makes
// Element{x = [x_key], y = [y_key], sample_weight = [weight_key]} from its FixedLenFeatures (empty keys: undefined).
std::function<Element(const Element&)> parse_example_fn(FeatureSpec features, std::string x_key, std::string y_key = "",
                                                        std::string weight_key = "");

// One feature's values as an Example holds them, for serialize_example.
using FeatureValues = std::variant<std::vector<int64_t>, std::vector<float>, std::vector<std::string>>;
// The serialized tf.train.Example with these features, keys in sorted order so that equal features give equal
// bytes: records for TFRecordWriter that TensorFlow's parsers read.
std::string serialize_example(const std::map<std::string, FeatureValues>& features);

// ---- The messages of tf.train.Example, for the Python classes of tf.train (python/lockstep/io/_example.py) ----
// Each message's value: BytesList, FloatList and Int64List are FeatureValues (an empty list keeps its kind); a
// Feature is an ExampleFeature (nullopt: its oneof `kind` is not set); Features is ExampleFeatures; an Example is an
// optional ExampleFeatures (nullopt: no `features` field, which is not the same bytes as empty Features).
using ExampleFeature = std::optional<FeatureValues>;
using ExampleFeatures = std::map<std::string, ExampleFeature>;

// Protobuf's wire format, deterministic (map entries in key order): the bytes TensorFlow's
// SerializeToString(deterministic=True) writes.
std::string serialize_feature_list(const FeatureValues& list);
std::string serialize_feature(const ExampleFeature& feature);
std::string serialize_features(const ExampleFeatures& features);
std::string serialize_example_message(const std::optional<ExampleFeatures>& example);

// Any encoding protobuf reads (packed or not, fields repeated: lists concatenate, the last kind and map entry
// win). Bytes that are not such a message: DataLossError naming the message and the byte count (TF's DecodeError).
// parse_feature_list reads the list of `dtype` (int64, float32 or kString).
FeatureValues parse_feature_list(std::string_view serialized, DType dtype);
ExampleFeature parse_feature(std::string_view serialized);
ExampleFeatures parse_features(std::string_view serialized);
std::optional<ExampleFeatures> parse_example_message(std::string_view serialized);

// Protobuf's text format of the serialized message `message` ("Example", "Features", "Feature", "BytesList",
// "FloatList" or "Int64List"): what str() of TensorFlow's message prints, map entries in key order.
std::string example_message_text(const std::string& message, std::string_view serialized);

}  // namespace lockstep::data
