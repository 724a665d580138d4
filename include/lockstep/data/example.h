// tf.train.Example parsing (tf.io.parse_single_example / tf.io.parse_example): a FeatureSpec maps feature keys to
// FixedLenFeature (a dense tensor of a fixed shape) or VarLenFeature (a SparseTensor), for int64, float32 and
// string (bytes) features; serialize_example writes the same format.
//
// Strings: as in TF, a string FixedLenFeature (dtype kString) comes back as a StringTensor of the spec's shape
// (ParsedFeatures::dense_strings), and a VarLen one's values are in SparseTensor::string_values.
//
// Typical use:
//   data::FeatureSpec spec = {{"image", data::FixedLenFeature{{28, 28}, DType::float32}},
//                             {"label", data::FixedLenFeature{{}, DType::int64}}};
//   auto ds = data::TFRecordDataset(files).map(data::parse_example_fn(spec, "image", "label")).batch(64);
// or, as TF's ds.map(lambda r: tf.io.parse_single_example(r, spec)), a dict element of every feature:
//   auto ds = data::TFRecordDataset(files).map(data::parse_example_fn(spec));
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

// The dtype of a feature in a spec: a numeric DType (int64 or float32; converts implicitly) or kString, TF's
// tf.string (a BytesList), which is no DType: its values come back as strings.
class FeatureDType {
 public:
  constexpr FeatureDType(DType dtype) : dtype_(dtype) {}  // NOLINT(google-explicit-constructor)
  static constexpr FeatureDType string() { return FeatureDType(); }
  constexpr bool is_string() const { return !dtype_.has_value(); }
  // The numeric DType; InvalidArgumentError for kString.
  DType dtype() const;
  // "int64", "float32", ... or "string", as TF names them.
  std::string name() const;
  constexpr bool operator==(const FeatureDType& other) const = default;

 private:
  constexpr FeatureDType() = default;
  std::optional<DType> dtype_;  // nullopt: string
};

// TF's tf.string in a feature spec.
inline constexpr FeatureDType kString = FeatureDType::string();

// A feature with `shape` values of `dtype` (int64, float32 or kString) in every example. default_value stands in
// when an example lacks the feature: a Tensor for a numeric feature, a StringTensor for a kString one, holding one
// value (broadcast) or as many as the shape holds; left None, the feature is required.
struct FixedLenFeature {
  std::vector<int64_t> shape = {};
  FeatureDType dtype = DType::float32;
  Element default_value = {};
};

// A feature with any number of values (0 included) of `dtype`; parsed into a SparseTensor.
struct VarLenFeature {
  FeatureDType dtype = DType::float32;
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

// What parse_single_example / parse_example return: the FixedLenFeatures' values, numeric ones in dense and string
// ones in dense_strings, and the VarLenFeatures' in sparse (TF returns all three in one dict).
struct ParsedFeatures {
  std::map<std::string, Tensor> dense;
  std::map<std::string, StringTensor> dense_strings;
  std::map<std::string, SparseTensor> sparse;
  // dense.at(key), with an error that names the key and the features there are.
  const Tensor& operator[](const std::string& key) const;
};

// One serialized Example (a record of TFRecordDataset: element.string().item()). Dense values have the spec's
// shape; VarLen ones are SparseTensors of rank 1. Errors as TF's: a required feature that is missing names the
// key; a feature of another type names the key and both types; a FixedLen feature with the wrong number of values
// names the key, the expected and the actual count (InvalidArgumentError for all three).
ParsedFeatures parse_single_example(std::string_view serialized, const FeatureSpec& features);
// A batch of serialized Examples (TF: a 1-D string tensor, e.g. a batched TFRecordDataset's
// element.string().values). Dense values get a leading batch axis; VarLen ones are SparseTensors of rank 2 whose
// dense_shape is [batch, longest list].
ParsedFeatures parse_example(const std::vector<std::string>& serialized, const FeatureSpec& features);

// map() functions for TFRecordDataset, whose elements are string scalars (InvalidArgumentError naming the element
// for anything else). This one makes Element{x = [x_key], y = [y_key], sample_weight = [weight_key]} from the
// FixedLenFeatures of each record (empty keys: None).
std::function<Element(const Element&)> parse_example_fn(FeatureSpec features, std::string x_key, std::string y_key = "",
                                                        std::string weight_key = "");
// TF's ds.map(lambda r: tf.io.parse_single_example(r, spec)): the dict element {key: value} of every feature, a
// Tensor for a numeric one and a StringTensor for a string one. FixedLenFeatures only (InvalidArgumentError naming
// a VarLenFeature): an element holds no SparseTensor, so parse those with parse_single_example in a map of your own.
std::function<Element(const Element&)> parse_example_fn(FeatureSpec features);

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
FeatureValues parse_feature_list(std::string_view serialized, FeatureDType dtype);
ExampleFeature parse_feature(std::string_view serialized);
ExampleFeatures parse_features(std::string_view serialized);
std::optional<ExampleFeatures> parse_example_message(std::string_view serialized);

// Protobuf's text format of the serialized message `message` ("Example", "Features", "Feature", "BytesList",
// "FloatList" or "Int64List"): what str() of TensorFlow's message prints, map entries in key order.
std::string example_message_text(const std::string& message, std::string_view serialized);

}  // namespace lockstep::data
