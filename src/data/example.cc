// parse_example and friends: each serialized Example is decoded with the generated protobuf classes
// (example.proto), each feature of the spec is looked up and checked (type, count, default), and the values of
// all examples are assembled into dense tensors or SparseTensors. parse_single_example is the same with no batch axis.
#include "lockstep/data/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <climits>

#include "data/example.pb.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::data {

namespace {

using Values = std::variant<std::vector<int64_t>, std::vector<float>, std::vector<std::string>>;

// The list type an Example uses for dtype, as TF names it in its errors.
const char* list_name(FeatureDType dtype) {
  return dtype == DType::int64     ? "int64 (Int64List)"
         : dtype == DType::float32 ? "float32 (FloatList)"
                                   : "string (BytesList)";
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return Shape(shape).str();
}

// Where a feature was read: "parse_single_example: feature \"k\"" or "parse_example: example 3, feature \"k\"".
struct Where {
  const char* fn;
  int64_t example;  // -1: single
  std::string str(const std::string& key) const {
    return example < 0 ? make_message(fn, ": feature \"", key, "\"")
                       : make_message(fn, ": example ", example, ", feature \"", key, "\"");
  }
};

void check_spec(const FeatureSpec& spec, const char* fn) {
  for (const auto& [key, feature] : spec) {
    const FeatureDType dtype = std::visit([](const auto& f) { return f.dtype; }, feature);
    LS_CHECK(dtype == DType::int64 || dtype == DType::float32 || dtype == kString, InvalidArgumentError, fn,
             ": feature \"", key, "\" asks for ", dtype.name(),
             "; Examples hold int64, float32 or string (kString): use one of those");
    const auto* fixed = std::get_if<FixedLenFeature>(&feature);
    if (!fixed) continue;
    for (int64_t d : fixed->shape)
      LS_CHECK(d >= 0, InvalidArgumentError, fn, ": feature \"", key, "\" has shape ", shape_str(fixed->shape),
               " with a negative dimension; use VarLenFeature for lists of any length");
    const Element& def = fixed->default_value;
    if (def.is_none()) continue;
    LS_CHECK(dtype.is_string() ? def.is_string() : def.is_tensor(), InvalidArgumentError, fn, ": feature \"", key,
             "\" is ", dtype.name(), ", so its default_value must be a ", dtype.is_string() ? "StringTensor" : "Tensor",
             ", got ", def.str());
    const int64_t n = def.is_string() ? def.string().shape.numel() : def.tensor().numel();
    LS_CHECK(n == 1 || n == count_of(fixed->shape), InvalidArgumentError, fn, ": feature \"", key, "\" has shape ",
             shape_str(fixed->shape), " (", count_of(fixed->shape), " values) but its default_value has ", n,
             "; pass a scalar or one value per element");
  }
}

// Feature `key` of one example, checked against its spec: the values, with a FixedLen feature's default in place of
// a missing one.
Values feature_values(const proto::Features& features, const std::string& key,
                      const std::variant<FixedLenFeature, VarLenFeature>& spec, const Where& where) {
  const auto* fixed = std::get_if<FixedLenFeature>(&spec);
  const FeatureDType dtype = fixed ? fixed->dtype : std::get<VarLenFeature>(spec).dtype;
  auto it = features.feature().find(key);
  if (it == features.feature().end() || it->second.kind_case() == proto::Feature::KIND_NOT_SET) {
    if (!fixed) {
      if (dtype == DType::int64) return std::vector<int64_t>{};
      if (dtype == DType::float32) return std::vector<float>{};
      return std::vector<std::string>{};
    }
    const int64_t n = count_of(fixed->shape);
    if (fixed->default_value.is_none()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : features.feature()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());  // protobuf's map has no order
      std::string present;
      for (const std::string& k : keys) present += (present.empty() ? "" : ", ") + k;
      throw InvalidArgumentError(make_message(
          where.str(key), " (", dtype.name(), ") is required but the example does not have it (it has: ",
          present.empty() ? "no features" : present, "); check the key, or give the FixedLenFeature a default_value"));
    }
    if (dtype == kString) {
      std::vector<std::string> all = fixed->default_value.string().values;
      if (all.size() == 1) all.assign(static_cast<size_t>(n), all[0]);
      return all;
    }
    const Tensor& def = fixed->default_value.tensor();
    auto fill = [&](auto v) {
      using T = typename decltype(v)::value_type;
      std::vector<T> all = def.to_vector<T>();
      if (all.size() == 1) all.assign(static_cast<size_t>(n), all[0]);
      return all;
    };
    if (dtype == DType::int64) return fill(std::vector<int64_t>{});
    return fill(std::vector<float>{});
  }
  const proto::Feature& f = it->second;
  const FeatureDType held = f.has_int64_list() ? DType::int64 : f.has_float_list() ? DType::float32 : kString;
  LS_CHECK(held == dtype, InvalidArgumentError, where.str(key), " holds ", list_name(held),
           " values but the spec asks for ", dtype.name(), "; make the spec's dtype match the data");
  Values values;
  if (held == DType::int64)
    values = std::vector<int64_t>(f.int64_list().value().begin(), f.int64_list().value().end());
  else if (held == DType::float32)
    values = std::vector<float>(f.float_list().value().begin(), f.float_list().value().end());
  else
    values = std::vector<std::string>(f.bytes_list().value().begin(), f.bytes_list().value().end());
  if (fixed) {
    const size_t got = std::visit([](const auto& v) { return v.size(); }, values);
    const int64_t want = count_of(fixed->shape);
    LS_CHECK(static_cast<int64_t>(got) == want, InvalidArgumentError, where.str(key), " has ", got,
             " value(s) but its FixedLenFeature of shape ", shape_str(fixed->shape), " expects ", want,
             "; fix the shape in the spec, or use VarLenFeature for lists of varying length");
  }
  return values;
}

proto::Example decode(std::string_view bytes, const Where& where) {
  proto::Example example;
  LS_CHECK(example.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), InvalidArgumentError, where.fn,
           where.example < 0 ? std::string() : make_message(": example ", where.example), ": the ", bytes.size(),
           " bytes are not a serialized tf.train.Example; pass the records of a TFRecord file of Examples");
  return example;
}

// Dense values of one numeric feature over all examples: [batch?, shape...].
Tensor assemble_dense(const FixedLenFeature& spec, const std::vector<Values>& per_example, bool batched) {
  std::vector<int64_t> dims = spec.shape;
  if (batched) dims.insert(dims.begin(), static_cast<int64_t>(per_example.size()));
  Tensor out = Tensor::empty(Shape(dims), spec.dtype.dtype());
  auto copy = [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    for (const Values& v : per_example) {
      const auto& values = std::get<std::vector<T>>(v);
      std::copy(values.begin(), values.end(), dst);
      dst += values.size();
    }
  };
  if (spec.dtype == DType::int64)
    copy(out.data<int64_t>());
  else
    copy(out.data<float>());
  return out;
}

// The same for a string feature, its strings moved out of per_example.
StringTensor assemble_dense_strings(const FixedLenFeature& spec, std::vector<Values>& per_example, bool batched) {
  std::vector<int64_t> dims = spec.shape;
  if (batched) dims.insert(dims.begin(), static_cast<int64_t>(per_example.size()));
  std::vector<std::string> values;
  values.reserve(static_cast<size_t>(Shape(dims).numel()));
  for (Values& v : per_example)
    for (std::string& s : std::get<std::vector<std::string>>(v)) values.push_back(std::move(s));
  return StringTensor(Shape(dims), std::move(values));
}

SparseTensor assemble_sparse(FeatureDType dtype, std::vector<Values>& per_example, bool batched) {
  const int64_t rank = batched ? 2 : 1;
  int64_t n = 0, longest = 0;
  for (const Values& v : per_example) {
    const int64_t k = static_cast<int64_t>(std::visit([](const auto& x) { return x.size(); }, v));
    n += k;
    longest = std::max(longest, k);
  }
  SparseTensor out;
  out.indices = Tensor::empty({n, rank}, DType::int64);
  out.dense_shape = Tensor::empty({rank}, DType::int64);
  int64_t* shape = out.dense_shape.data<int64_t>();
  if (batched) shape[0] = static_cast<int64_t>(per_example.size());
  shape[rank - 1] = longest;
  int64_t* idx = out.indices.data<int64_t>();
  for (size_t b = 0; b < per_example.size(); ++b) {
    const int64_t k = static_cast<int64_t>(std::visit([](const auto& x) { return x.size(); }, per_example[b]));
    for (int64_t j = 0; j < k; ++j) {
      if (batched) *idx++ = static_cast<int64_t>(b);
      *idx++ = j;
    }
  }
  if (dtype == kString) {
    for (Values& v : per_example)
      for (std::string& s : std::get<std::vector<std::string>>(v)) out.string_values.push_back(std::move(s));
    return out;
  }
  out.values = Tensor::empty({n}, dtype.dtype());
  auto copy = [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    for (const Values& v : per_example) {
      const auto& values = std::get<std::vector<T>>(v);
      dst = std::copy(values.begin(), values.end(), dst);
    }
  };
  if (dtype == DType::int64)
    copy(out.values.data<int64_t>());
  else
    copy(out.values.data<float>());
  return out;
}

ParsedFeatures parse(const std::vector<std::string_view>& records, const FeatureSpec& spec, bool batched) {
  const char* fn = batched ? "parse_example" : "parse_single_example";
  check_spec(spec, fn);
  std::map<std::string, std::vector<Values>> columns;
  for (size_t i = 0; i < records.size(); ++i) {
    const Where where{fn, batched ? static_cast<int64_t>(i) : -1};
    const proto::Example example = decode(records[i], where);
    for (const auto& [key, feature] : spec)
      columns[key].push_back(feature_values(example.features(), key, feature, where));
  }
  ParsedFeatures out;
  for (const auto& [key, feature] : spec) {
    std::vector<Values>& column = columns[key];
    const auto* fixed = std::get_if<FixedLenFeature>(&feature);
    if (fixed && fixed->dtype.is_string())
      out.dense_strings.emplace(key, assemble_dense_strings(*fixed, column, batched));
    else if (fixed)
      out.dense.emplace(key, assemble_dense(*fixed, column, batched));
    else
      out.sparse[key] = assemble_sparse(std::get<VarLenFeature>(feature).dtype, column, batched);
  }
  return out;
}

// The serialized Example of a TFRecordDataset element: a string scalar.
std::string_view record_of(const Element& e) {
  LS_CHECK(e.is_string() && e.string().rank() == 0, InvalidArgumentError,
           "parse_example_fn: a record is a string scalar (an element of TFRecordDataset), got ", e.str(),
           "; map parse_example_fn over the records before batch() or other maps, or parse a batch of records with "
           "parse_example");
  return e.string().item();
}

}  // namespace

DType FeatureDType::dtype() const {
  LS_CHECK(dtype_.has_value(), InvalidArgumentError,
           "FeatureDType: kString (tf.string) is no numeric DType; its values are strings");
  return *dtype_;
}

std::string FeatureDType::name() const {
  return dtype_ ? std::string(dtype_name(*dtype_)) : "string";
}

const Tensor& ParsedFeatures::operator[](const std::string& key) const {
  auto it = dense.find(key);
  if (it != dense.end()) return it->second;
  std::string names;
  for (const auto& [k, v] : dense) names += (names.empty() ? "" : ", ") + k;
  LS_CHECK(!sparse.count(key), ValueError, "parsed feature \"", key,
           "\" is a VarLenFeature, so it is a SparseTensor: read it from .sparse (or sparse_to_dense it)");
  LS_CHECK(!dense_strings.count(key), ValueError, "parsed feature \"", key,
           "\" is a string feature, so it is a StringTensor: read it from .dense_strings");
  throw ValueError(
      make_message("no parsed feature \"", key, "\"; the FixedLenFeatures are: ", names.empty() ? "none" : names));
}

ParsedFeatures parse_single_example(std::string_view serialized, const FeatureSpec& features) {
  return parse({serialized}, features, false);
}
ParsedFeatures parse_example(const std::vector<std::string>& serialized, const FeatureSpec& features) {
  return parse(std::vector<std::string_view>(serialized.begin(), serialized.end()), features, true);
}

Tensor sparse_to_dense(const SparseTensor& sparse, double default_value) {
  LS_CHECK(sparse.values.defined(), InvalidArgumentError,
           "sparse_to_dense: the SparseTensor has no numeric values (a bytes feature's are in string_values)");
  const std::vector<int64_t> shape = sparse.dense_shape.to_vector<int64_t>();
  Tensor out = full(Shape(shape), default_value, sparse.values.dtype());
  const std::vector<int64_t> idx = sparse.indices.to_vector<int64_t>();
  const size_t rank = shape.size(), n = static_cast<size_t>(sparse.values.numel());
  LS_CHECK(idx.size() == n * rank, InvalidArgumentError, "sparse_to_dense: ", n, " values but indices of shape ",
           sparse.indices.shape().str(), "; indices must be [", n, ", ", rank, "]");
  auto scatter = [&](auto* dst) {
    using T = std::remove_pointer_t<decltype(dst)>;
    const std::vector<T> values = sparse.values.to_vector<T>();
    for (size_t i = 0; i < n; ++i) {
      int64_t flat = 0;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t j = idx[i * rank + d];
        LS_CHECK(j >= 0 && j < shape[d], InvalidArgumentError, "sparse_to_dense: index ", j, " of value ", i,
                 " is outside dense_shape ", Shape(shape).str());
        flat = flat * shape[d] + j;
      }
      dst[flat] = values[i];
    }
  };
  if (out.dtype() == DType::int64)
    scatter(out.data<int64_t>());
  else if (out.dtype() == DType::float32)
    scatter(out.data<float>());
  else
    throw InvalidArgumentError(make_message("sparse_to_dense: values of ", dtype_name(out.dtype()),
                                            " are not supported; int64 and float32 are"));
  return out;
}

std::function<Element(const Element&)> parse_example_fn(FeatureSpec features, std::string x_key, std::string y_key,
                                                        std::string weight_key) {
  for (const std::string* key : {&x_key, &y_key, &weight_key}) {
    if (key->empty()) continue;
    auto it = features.find(*key);
    LS_CHECK(it != features.end() && std::holds_alternative<FixedLenFeature>(it->second), InvalidArgumentError,
             "parse_example_fn: \"", *key, "\" is ",
             it == features.end() ? "not in the feature spec" : "a VarLenFeature",
             "; x, y and sample_weight come from FixedLenFeatures of the spec");
  }
  LS_CHECK(!x_key.empty(), InvalidArgumentError, "parse_example_fn: x_key is empty; name the feature that becomes x");
  return [features = std::move(features), x_key = std::move(x_key), y_key = std::move(y_key),
          weight_key = std::move(weight_key)](const Element& e) {
    ParsedFeatures f = parse_single_example(record_of(e), features);
    auto take = [&](const std::string& key) -> Element {
      if (key.empty()) return {};
      if (auto s = f.dense_strings.find(key); s != f.dense_strings.end()) return std::move(s->second);
      return f.dense.at(key);
    };
    return Element{take(x_key), take(y_key), take(weight_key)};
  };
}

std::function<Element(const Element&)> parse_example_fn(FeatureSpec features) {
  for (const auto& [key, feature] : features)
    LS_CHECK(std::holds_alternative<FixedLenFeature>(feature), InvalidArgumentError, "parse_example_fn: feature \"",
             key,
             "\" is a VarLenFeature, but a dataset element holds no SparseTensor; use a FixedLenFeature (with a "
             "default_value for lists that may be missing), or map with parse_single_example directly");
  return [features = std::move(features)](const Element& e) {
    ParsedFeatures f = parse_single_example(record_of(e), features);
    std::vector<std::pair<std::string, Element>> items;
    for (auto& [key, t] : f.dense) items.emplace_back(key, std::move(t));
    for (auto& [key, s] : f.dense_strings) items.emplace_back(key, std::move(s));
    return Element::dict(std::move(items));
  };
}

std::string serialize_example(const std::map<std::string, FeatureValues>& features) {
  return serialize_example_message(ExampleFeatures(features.begin(), features.end()));
}

// ---- The messages of tf.train.Example, for the Python classes of tf.train ----

namespace {

proto::Feature feature_proto(const ExampleFeature& feature) {
  proto::Feature f;
  if (!feature) return f;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&*feature))
    f.mutable_int64_list()->mutable_value()->Add(i->begin(), i->end());
  else if (const auto* x = std::get_if<std::vector<float>>(&*feature))
    f.mutable_float_list()->mutable_value()->Add(x->begin(), x->end());
  else {
    const auto& b = std::get<std::vector<std::string>>(*feature);
    f.mutable_bytes_list()->mutable_value()->Add(b.begin(), b.end());  // an empty list still sets the kind
  }
  return f;
}

ExampleFeature values_of(const proto::Feature& f) {
  switch (f.kind_case()) {
    case proto::Feature::kInt64List:
      return std::vector<int64_t>(f.int64_list().value().begin(), f.int64_list().value().end());
    case proto::Feature::kFloatList:
      return std::vector<float>(f.float_list().value().begin(), f.float_list().value().end());
    case proto::Feature::kBytesList:
      return std::vector<std::string>(f.bytes_list().value().begin(), f.bytes_list().value().end());
    default:
      return std::nullopt;
  }
}

proto::Features features_proto(const ExampleFeatures& features) {
  proto::Features out;
  auto& map = *out.mutable_feature();
  for (const auto& [key, feature] : features) map[key] = feature_proto(feature);
  return out;
}

ExampleFeatures values_of(const proto::Features& features) {
  ExampleFeatures out;
  for (const auto& [key, feature] : features.feature()) out.emplace(key, values_of(feature));
  return out;
}

// Deterministic: map entries in key order, so the same features always give the same bytes.
std::string deterministic_bytes(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    LS_CHECK(message.SerializeToCodedStream(&coded), ValueError, "tf.train.", message.GetTypeName(),
             ": the message could not be serialized");
  }
  return out;
}

template <class Message>
Message parse_message(std::string_view serialized, const char* name) {
  Message m;
  LS_CHECK(serialized.size() <= static_cast<size_t>(INT_MAX) &&
               m.ParseFromArray(serialized.data(), static_cast<int>(serialized.size())),
           DataLossError, "tf.train.", name, ": the ", serialized.size(), " bytes are not a serialized tf.train.", name,
           " (protobuf cannot parse them); pass bytes that SerializeToString wrote");
  return m;
}

template <class List>
std::vector<typename List::value_type> list_values(const List& list) {
  return {list.begin(), list.end()};
}

std::string text_of(const google::protobuf::Message& message) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);  // keys print as UTF-8, bytes escaped, as TF's str()
  std::string out;
  printer.PrintToString(message, &out);
  return out;
}

}  // namespace

std::string serialize_feature_list(const FeatureValues& list) {
  const proto::Feature f = feature_proto(list);
  if (f.has_int64_list()) return deterministic_bytes(f.int64_list());
  if (f.has_float_list()) return deterministic_bytes(f.float_list());
  return deterministic_bytes(f.bytes_list());
}

std::string serialize_feature(const ExampleFeature& feature) {
  return deterministic_bytes(feature_proto(feature));
}

std::string serialize_features(const ExampleFeatures& features) {
  return deterministic_bytes(features_proto(features));
}

std::string serialize_example_message(const std::optional<ExampleFeatures>& example) {
  proto::Example out;
  if (example) *out.mutable_features() = features_proto(*example);
  return deterministic_bytes(out);
}

FeatureValues parse_feature_list(std::string_view serialized, FeatureDType dtype) {
  if (dtype == DType::int64) return list_values(parse_message<proto::Int64List>(serialized, "Int64List").value());
  if (dtype == DType::float32) return list_values(parse_message<proto::FloatList>(serialized, "FloatList").value());
  LS_CHECK(dtype == kString, InvalidArgumentError, "parse_feature_list: dtype ", dtype.name(),
           " is not a list of an Example; use int64 (Int64List), float32 (FloatList) or kString (BytesList)");
  return list_values(parse_message<proto::BytesList>(serialized, "BytesList").value());
}

ExampleFeature parse_feature(std::string_view serialized) {
  return values_of(parse_message<proto::Feature>(serialized, "Feature"));
}

ExampleFeatures parse_features(std::string_view serialized) {
  return values_of(parse_message<proto::Features>(serialized, "Features"));
}

std::optional<ExampleFeatures> parse_example_message(std::string_view serialized) {
  const proto::Example example = parse_message<proto::Example>(serialized, "Example");
  if (!example.has_features()) return std::nullopt;
  return values_of(example.features());
}

std::string example_message_text(const std::string& message, std::string_view serialized) {
  if (message == "Example") return text_of(parse_message<proto::Example>(serialized, "Example"));
  if (message == "Features") return text_of(parse_message<proto::Features>(serialized, "Features"));
  if (message == "Feature") return text_of(parse_message<proto::Feature>(serialized, "Feature"));
  if (message == "BytesList") return text_of(parse_message<proto::BytesList>(serialized, "BytesList"));
  if (message == "FloatList") return text_of(parse_message<proto::FloatList>(serialized, "FloatList"));
  LS_CHECK(message == "Int64List", InvalidArgumentError, "example_message_text: \"", message,
           "\" is not a message of tf.train.Example; use Example, Features, Feature, BytesList, FloatList or "
           "Int64List");
  return text_of(parse_message<proto::Int64List>(serialized, "Int64List"));
}

}  // namespace lockstep::data
