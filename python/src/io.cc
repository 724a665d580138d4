// tf.train.Example's messages for python/lockstep/io/_example.py, as _lockstep.io.serialize_message / parse_message /
// message_text: each message's wire format and text come from lockstep::data's generated protobuf code. Python hands
// a message over as a value: a list's values; a Feature's (kind, values) or None; a Features' {key: Feature value};
// an Example's Features value or None. Also the image decoders and resize of lockstep/data/images.h, for
// python/lockstep/io/_image.py and image.py.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string_view>

#include "bindings.h"
#include "lockstep/data/example.h"
#include "lockstep/data/images.h"

namespace lockstep::python {
namespace {

// A list message: the name of its field in Feature's oneof `kind`, its message name and the dtype it holds.
struct ListKind {
  const char* field;
  const char* message;
  data::FeatureDType dtype;
};
constexpr ListKind kListKinds[] = {{"bytes_list", "BytesList", data::kString},
                                   {"float_list", "FloatList", DType::float32},
                                   {"int64_list", "Int64List", DType::int64}};

// The list kind `name` names: a field or message name.
const ListKind& list_kind(std::string_view name) {
  for (const ListKind& k : kListKinds)
    if (name == k.field || name == k.message) return k;
  throw ValueError(
      make_message("\"", name, "\" is not a list of tf.train.Feature; use bytes_list, float_list or int64_list"));
}

data::FeatureValues list_from_python(const ListKind& kind, nb::handle values) {
  if (kind.dtype == DType::int64) return nb::cast<std::vector<int64_t>>(values);
  if (kind.dtype == DType::float32) return nb::cast<std::vector<float>>(values);
  std::vector<std::string> out;
  for (nb::handle v : values) {
    auto b = nb::cast<nb::bytes>(v);
    out.emplace_back(b.c_str(), b.size());
  }
  return out;
}

nb::list list_to_python(const data::FeatureValues& values) {
  nb::list out;
  std::visit(
      [&](const auto& list) {
        for (const auto& v : list) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
            out.append(nb::bytes(v.data(), v.size()));
          else
            out.append(v);
        }
      },
      values);
  return out;
}

data::ExampleFeature feature_from_python(nb::handle feature) {
  if (feature.is_none()) return std::nullopt;
  return list_from_python(list_kind(nb::cast<std::string>(feature[0])), feature[1]);
}

nb::object feature_to_python(const data::ExampleFeature& feature) {
  if (!feature) return nb::none();
  const char* field = std::holds_alternative<std::vector<int64_t>>(*feature) ? "int64_list"
                      : std::holds_alternative<std::vector<float>>(*feature) ? "float_list"
                                                                             : "bytes_list";
  return nb::make_tuple(field, list_to_python(*feature));
}

data::ExampleFeatures features_from_python(nb::handle features) {
  data::ExampleFeatures out;
  for (auto [key, value] : nb::cast<nb::dict>(features))
    out.emplace(nb::cast<std::string>(key), feature_from_python(value));
  return out;
}

nb::dict features_to_python(const data::ExampleFeatures& features) {
  nb::dict out;
  for (const auto& [key, feature] : features) out[nb::str(key.data(), key.size())] = feature_to_python(feature);
  return out;
}

nb::bytes to_bytes(const std::string& s) {
  return nb::bytes(s.data(), s.size());
}

// The C++ call, without the GIL (the values are C++ copies by then).
template <typename F>
auto unlocked(F&& f) {
  nb::gil_scoped_release released;
  return f();
}

nb::bytes serialize_message(const std::string& message, nb::handle value) {
  if (message == "Example") {
    std::optional<data::ExampleFeatures> features;
    if (!value.is_none()) features = features_from_python(value);
    return to_bytes(unlocked([&] { return data::serialize_example_message(features); }));
  }
  if (message == "Features") {
    const data::ExampleFeatures features = features_from_python(value);
    return to_bytes(unlocked([&] { return data::serialize_features(features); }));
  }
  if (message == "Feature") {
    const data::ExampleFeature feature = feature_from_python(value);
    return to_bytes(unlocked([&] { return data::serialize_feature(feature); }));
  }
  const data::FeatureValues list = list_from_python(list_kind(message), value);
  return to_bytes(unlocked([&] { return data::serialize_feature_list(list); }));
}

nb::object parse_message(const std::string& message, const nb::bytes& serialized) {
  const std::string_view bytes(serialized.c_str(), serialized.size());
  if (message == "Example") {
    const auto example = unlocked([&] { return data::parse_example_message(bytes); });
    return example ? nb::object(features_to_python(*example)) : nb::none();
  }
  if (message == "Features") return features_to_python(unlocked([&] { return data::parse_features(bytes); }));
  if (message == "Feature") return feature_to_python(unlocked([&] { return data::parse_feature(bytes); }));
  const data::FeatureDType dtype = list_kind(message).dtype;
  return list_to_python(unlocked([&] { return data::parse_feature_list(bytes, dtype); }));
}

// The image in `encoded` decoded by the decoder `format` names: "png", "jpeg" or "any" (told apart by signature).
Tensor decode(const std::string& format, const nb::bytes& encoded, int channels, const std::string& name) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(encoded.c_str()), encoded.size());
  if (format == "png") return unlocked([&] { return data::decode_png(bytes, channels, name); });
  if (format == "jpeg") return unlocked([&] { return data::decode_jpeg(bytes, channels, name); });
  if (format == "any") return unlocked([&] { return data::decode_image(bytes, channels, name); });
  throw ValueError(make_message("decode_image: format \"", format, "\" is not one of \"png\", \"jpeg\", \"any\""));
}

void bind_images(nb::module_& io) {
  io.def("decode_image", &decode, nb::arg("format"), nb::arg("data"), nb::arg("channels"), nb::arg("name"),
         "uint8 [height, width, channels] pixels of PNG or JPEG bytes, as tf.io.decode_png / decode_jpeg / "
         "decode_image; DataLossError for corrupt bytes, InvalidArgumentError for another format.");
  io.def(
      "resize_image",
      [](nb::handle images, int64_t height, int64_t width, const std::string& method) {
        const Tensor in = to_tensor(images);
        return unlocked([&] { return data::resize_image(in, {height, width}, method); });
      },
      nb::arg("images"), nb::arg("height"), nb::arg("width"), nb::arg("method"),
      "tf.image.resize of [h, w, c] or [n, h, w, c] images with \"bilinear\" (float32) or \"nearest\" (same dtype).");
}

}  // namespace

void bind_example_messages(nb::module_& m) {
  nb::module_ io = m.def_submodule("io");
  io.def("serialize_message", &serialize_message, nb::arg("message"), nb::arg("value").none(),
         "The deterministic wire bytes of the tf.train message `message` (its class name) holding `value`.");
  io.def("parse_message", &parse_message, nb::arg("message"), nb::arg("serialized"),
         "The value of the serialized tf.train message `message`; DataLossError for bytes that are not one.");
  io.def(
      "message_text",
      [](const std::string& message, const nb::bytes& serialized) {
        const std::string_view bytes(serialized.c_str(), serialized.size());
        return unlocked([&] { return data::example_message_text(message, bytes); });
      },
      nb::arg("message"), nb::arg("serialized"), "Protobuf's text format of the serialized tf.train message.");
  bind_images(io);
}

}  // namespace lockstep::python
