// The layers typical Keras image and text models add to the basic ones: global pooling, Embedding,
// LayerNormalization, Normalization, Rescaling, and the merging layers Add and Concatenate. Gradients come from the
// ops.
#include <algorithm>

#include "keras-impl.h"
#include "lockstep/keras/layers.h"

namespace lockstep::keras {
namespace layers {

namespace {
// An option lockstep does not implement: one error naming the layer and the option.
void check_supported(bool ok, const std::string& cls, const std::string& name, const std::string& option,
                     const std::string& why) {
  LS_CHECK(ok, ValueError, cls, " layer \"", name, "\": ", option, " is not supported (", why, ")");
}

Shape without_batch(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()));
}
}  // namespace

// ---- GlobalAveragePooling2D, GlobalMaxPooling2D ----

GlobalPooling2D::GlobalPooling2D(std::string class_name, GlobalPooling2DOptions options)
    : Layer(std::move(class_name), options.name), keepdims_(options.keepdims) {
  check_supported(options.data_format == "channels_last", this->class_name(), name(),
                  "data_format=\"" + options.data_format + "\"", "lockstep's images are channels_last (NHWC)");
}

void GlobalPooling2D::build(const Shape& s) {
  LS_CHECK(s.rank() == 3, ValueError, class_name(), " \"", name(),
           "\" expects inputs of shape (batch, height, width, channels), got ", detail::with_none(s));
}

Shape GlobalPooling2D::compute_output_shape(const Shape& s) const {
  return keepdims_ ? Shape{1, 1, s[-1]} : Shape{s[-1]};
}

nlohmann::json GlobalPooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = "channels_last";
  c["keepdims"] = keepdims_;
  return c;
}

Tensor GlobalAveragePooling2D::call(const Tensor& x, bool) {
  return reduce_mean(x, {1, 2}, keepdims_);
}
Tensor GlobalMaxPooling2D::call(const Tensor& x, bool) {
  return reduce_max(x, {1, 2}, keepdims_);
}

// ---- Embedding ----

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(kClassName, options.name), input_dim_(input_dim), output_dim_(output_dim), opt_(std::move(options)) {
  LS_CHECK(input_dim > 0 && output_dim > 0, ValueError, "Embedding needs positive input_dim and output_dim, got ",
           input_dim, " and ", output_dim);
  check_supported(!opt_.mask_zero, kClassName, name(), "mask_zero=true", "lockstep has no masking");
}

void Embedding::build(const Shape&) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, opt_.embeddings_initializer);
}

Shape Embedding::compute_output_shape(const Shape& s) const {
  std::vector<int64_t> dims = s.dims();
  dims.push_back(output_dim_);
  return Shape(dims);
}

Tensor Embedding::call(const Tensor& x, bool) {
  const bool integer = x.dtype() == DType::int32 || x.dtype() == DType::int64 || x.dtype() == DType::uint8;
  // The backward of gather adds each output row's gradient into the row it came from.
  return gather(autocast(embeddings_), integer ? x : cast(x, DType::int64));
}

nlohmann::json Embedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = opt_.embeddings_initializer.ptr->get_config();
  c["embeddings_regularizer"] = nullptr;
  c["activity_regularizer"] = nullptr;
  c["embeddings_constraint"] = nullptr;
  c["mask_zero"] = false;
  c["quantization_config"] = nullptr;
  return c;
}

// ---- LayerNormalization ----

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer(kClassName, options.name), opt_(std::move(options)) {
  LS_CHECK(opt_.epsilon > 0, ValueError, "LayerNormalization needs epsilon > 0, got ", opt_.epsilon);
}

void LayerNormalization::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "LayerNormalization \"", name(), "\" needs inputs of rank >= 2");
  check_supported(opt_.axis == -1 || opt_.axis == s.rank(), kClassName, name(), "axis=" + std::to_string(opt_.axis),
                  "only the last axis (-1) is");
  const Shape c{s[-1]};
  if (opt_.scale) gamma_ = add_weight("gamma", c, opt_.gamma_initializer);  // Keras makes gamma first
  if (opt_.center) beta_ = add_weight("beta", c, opt_.beta_initializer);
}

Tensor LayerNormalization::call(const Tensor& x_in, bool) {
  // As Keras does, bfloat16 inputs are normalised in float32 and only the result is rounded.
  const Tensor x = x_in.dtype() == DType::bfloat16 ? cast(x_in, DType::float32) : x_in;
  const Tensor mean = reduce_mean(x, {-1}, true);
  const Tensor centered = x - mean;
  Tensor y = centered * rsqrt(reduce_mean(square(centered), {-1}, true) + opt_.epsilon);
  if (opt_.scale) y = y * gamma_;
  if (opt_.center) y = y + beta_;
  return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
}

nlohmann::json LayerNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = built() ? nlohmann::json::array({opt_.axis}) : nlohmann::json(opt_.axis);  // Keras' list once built
  c["epsilon"] = opt_.epsilon;
  c["center"] = opt_.center;
  c["scale"] = opt_.scale;
  c["rms_scaling"] = false;
  c["beta_initializer"] = opt_.beta_initializer.ptr->get_config();
  c["gamma_initializer"] = opt_.gamma_initializer.ptr->get_config();
  for (const char* k : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) c[k] = nullptr;
  return c;
}

// ---- Normalization ----

Normalization::Normalization(NormalizationOptions options) : Layer(kClassName, options.name), opt_(std::move(options)) {
  LS_CHECK(opt_.mean.has_value() == opt_.variance.has_value(), ValueError, "Normalization \"", name(),
           "\": give both mean and variance, or neither (and call adapt)");
  if (opt_.mean) {
    auto tensor = [](const std::vector<double>& v) {
      return cast(from_vector(v, Shape{static_cast<int64_t>(v.size())}), DType::float32);
    };
    given_mean_ = tensor(*opt_.mean);
    given_variance_ = tensor(*opt_.variance);
  }
}

void Normalization::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "Normalization \"", name(), "\" needs inputs of rank >= 2 (a batch of features)");
  const int64_t features = s[-1];
  if (opt_.mean) {
    for (const auto* given : {&*opt_.mean, &*opt_.variance})
      LS_CHECK(given->size() == 1 || static_cast<int64_t>(given->size()) == features, ValueError, "Normalization \"",
               name(), "\": ", given->size(), " statistics for ", features, " features; give one or one per feature");
    return;
  }
  mean_ = add_weight("mean", Shape{features}, "zeros", false);
  variance_ = add_weight("variance", Shape{features}, "ones", false);
  add_weight("count", Shape{}, "zeros", false, nullptr, DType::int64);  // Keras 3 keeps it (at 0) for old files
}

void Normalization::adapt(const Tensor& data) {
  LS_CHECK(!opt_.mean, ValueError, "Normalization \"", name(), "\" was given its mean and variance: adapt has nothing to set");
  LS_CHECK(data.rank() >= 1 && data.numel() > 0, ValueError, "Normalization \"", name(),
           "\": adapt needs a non-empty array of examples, got shape ", data.shape().str());
  const Tensor x = cast(data.rank() == 1 ? reshape(data, Shape{data.dim(0), 1}) : data, DType::float64);
  ensure_built(Shape(std::vector<int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end())));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) axes.push_back(d);
  NoGradGuard no_grad;
  const Tensor mean = reduce_mean(x, axes);
  mean_.assign(cast(mean, DType::float32));
  variance_.assign(cast(reduce_mean(square(x - mean), axes), DType::float32));
}

Tensor Normalization::call(const Tensor& x_in, bool) {
  const Tensor x = x_in.dtype() == compute_dtype() ? x_in : cast(x_in, compute_dtype());
  auto statistic = [&](const Tensor& given, const Variable& weight) {
    if (!given.defined()) return autocast(weight);
    return given.dtype() == x.dtype() ? given : cast(given, x.dtype());
  };
  const Tensor mean = statistic(given_mean_, mean_);
  const Tensor deviation = maximum(sqrt(statistic(given_variance_, variance_)), scalar(1e-7, x.dtype()));
  return opt_.invert ? mean + x * deviation : (x - mean) / deviation;
}

nlohmann::json Normalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = nlohmann::json::array({-1});
  c["invert"] = opt_.invert;
  c["mean"] = opt_.mean ? nlohmann::json(*opt_.mean) : nlohmann::json(nullptr);
  c["variance"] = opt_.variance ? nlohmann::json(*opt_.variance) : nlohmann::json(nullptr);
  return c;
}

// ---- LeakyReLU ----

LeakyReLU::LeakyReLU(double negative_slope, std::string name)
    : Layer(kClassName, std::move(name)), negative_slope_(negative_slope) {
  LS_CHECK(negative_slope >= 0, ValueError, "LeakyReLU \"", this->name(), "\": negative_slope must be >= 0, got ",
           negative_slope);
}

Tensor LeakyReLU::call(const Tensor& x, bool) {
  return where(greater_equal(x, scalar(0, x.dtype())), x, x * negative_slope_);
}

nlohmann::json LeakyReLU::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["negative_slope"] = negative_slope_;
  return c;
}

// ---- Rescaling ----

Rescaling::Rescaling(double scale, double offset, std::string name)
    : Layer(kClassName, std::move(name)), scale_(scale), offset_(offset) {}

Tensor Rescaling::call(const Tensor& x_in, bool) {
  // Integer images become floats of the layer's dtype first, as in Keras.
  const Tensor x = x_in.dtype() == compute_dtype() ? x_in : cast(x_in, compute_dtype());
  return offset_ == 0.0 ? x * scale_ : x * scale_ + offset_;
}

nlohmann::json Rescaling::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["scale"] = scale_;
  c["offset"] = offset_;
  return c;
}

// ---- Add, Concatenate ----

Shape Merge::compute_output_shape(const Shape&) const {
  throw ValueError(make_message(class_name(), " layer \"", name(), "\" needs a list of at least 2 inputs, got one"));
}
Tensor Merge::call(const Tensor&, bool) {
  throw ValueError(make_message(class_name(), " layer \"", name(), "\" needs a list of at least 2 inputs, got one"));
}

Shape Add::compute_output_shape_list(const std::vector<Shape>& shapes) const {
  LS_CHECK(shapes.size() >= 2, ValueError, "Add layer \"", name(), "\" needs a list of at least 2 inputs, got ",
           shapes.size());
  for (const Shape& s : shapes)
    LS_CHECK(s == shapes[0], ValueError, "Add layer \"", name(), "\": inputs must have the same shape, got ",
             detail::with_none(shapes[0]), " and ", detail::with_none(s));
  return shapes[0];
}

Tensor Add::call_list(const std::vector<Tensor>& xs, bool) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(without_batch(x.shape()));
  compute_output_shape_list(shapes);
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y;
}

Concatenate::Concatenate(int64_t axis, std::string name) : Merge(kClassName, std::move(name)), axis_(axis) {}

Shape Concatenate::compute_output_shape_list(const std::vector<Shape>& shapes) const {
  LS_CHECK(shapes.size() >= 2, ValueError, "Concatenate layer \"", name(), "\" needs a list of at least 2 inputs, got ",
           shapes.size());
  const int64_t rank = shapes[0].rank() + 1;  // with the batch axis
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  LS_CHECK(axis >= 1 && axis < rank, ValueError, "Concatenate layer \"", name(), "\": axis ", axis_,
           " is out of range for inputs of shape ", detail::with_none(shapes[0]), " (the batch axis cannot be joined)");
  std::vector<int64_t> out = shapes[0].dims();
  out[axis - 1] = 0;
  for (const Shape& s : shapes) {
    bool match = s.rank() == shapes[0].rank();
    for (int64_t d = 0; match && d < s.rank(); ++d) match = d == axis - 1 || s[d] == shapes[0][d];
    LS_CHECK(match, ValueError, "Concatenate layer \"", name(),
             "\" requires inputs with matching shapes except for the concatenation axis ", axis_, ", got ",
             detail::with_none(shapes[0]), " and ", detail::with_none(s));
    out[axis - 1] += s[axis - 1];
  }
  return Shape(out);
}

Tensor Concatenate::call_list(const std::vector<Tensor>& xs, bool) {
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(without_batch(x.shape()));
  compute_output_shape_list(shapes);
  return concat(xs, axis_ < 0 ? axis_ + xs[0].rank() : axis_);
}

nlohmann::json Concatenate::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = axis_;
  return c;
}

// ---- from_config ----

namespace {
template <typename Pooling>
std::shared_ptr<Pooling> global_pooling_from_config(const nlohmann::json& c) {
  return std::make_shared<Pooling>(GlobalPooling2DOptions{.keepdims = c.value("keepdims", false),
                                                          .data_format = c.value("data_format", "channels_last"),
                                                          .name = c.value("name", "")});
}
}  // namespace

namespace {
std::vector<Param> global_pooling_params() {
  return {detail::channels_last(), {"keepdims", false, "keep the pooled axes, of size 1"}};
}
}  // namespace

std::vector<Param> GlobalAveragePooling2D::params() { return global_pooling_params(); }
std::vector<Param> GlobalMaxPooling2D::params() { return global_pooling_params(); }
std::shared_ptr<GlobalAveragePooling2D> GlobalAveragePooling2D::from_config(const nlohmann::json& c) {
  return global_pooling_from_config<GlobalAveragePooling2D>(c);
}
std::shared_ptr<GlobalMaxPooling2D> GlobalMaxPooling2D::from_config(const nlohmann::json& c) {
  return global_pooling_from_config<GlobalMaxPooling2D>(c);
}

std::vector<Param> Embedding::params() {
  using detail::operator+;
  return std::vector<Param>{{"input_dim", kRequired, "the vocabulary's size: indices run from 0 to input_dim - 1"},
                            {"output_dim", kRequired, "the width of each index's vector"},
                            {"embeddings_initializer", "uniform", "the table's initial values"}} +
         detail::plain_kernel({"embeddings_regularizer", "embeddings_constraint"}) +
         std::vector<Param>{{"mask_zero", false, "lockstep has no masking: only False"},
                            Param::fixed("weights", nullptr, "not implemented by lockstep: call set_weights() once the layer is built")} +
         detail::plain_kernel({"lora_rank", "lora_alpha", "quantization_config"});
}

std::shared_ptr<Embedding> Embedding::from_config(const nlohmann::json& c) {
  check_supported(!c.value("mask_zero", false), kClassName, c.value("name", ""), "mask_zero=true",
                  "lockstep has no masking");
  return std::make_shared<Embedding>(
      detail::json_int(c.at("input_dim"), "input_dim"), detail::json_int(c.at("output_dim"), "output_dim"),
      EmbeddingOptions{.embeddings_initializer = initializers::from_config(c.at("embeddings_initializer")),
                       .name = c.value("name", "")});
}

std::vector<Param> LayerNormalization::params() {
  using detail::operator+;
  return std::vector<Param>{{"axis", -1, "the axis normalised: lockstep normalises the last (-1)"},
                            {"epsilon", 0.001, "added to the variance"},
                            {"center", true, "whether to add beta"},
                            {"scale", true, "whether to multiply by gamma"},
                            {"beta_initializer", "zeros", "beta's initial values"},
                            {"gamma_initializer", "ones", "gamma's initial values"}} +
         detail::plain_kernel({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
}

std::shared_ptr<LayerNormalization> LayerNormalization::from_config(const nlohmann::json& c) {
  const std::string name = c.value("name", "");
  check_supported(!c.value("rms_scaling", false), kClassName, name, "rms_scaling=true",
                  "lockstep does not implement it");
  nlohmann::json axis = c.value("axis", nlohmann::json(-1));
  if (axis.is_array() && axis.size() == 1) axis = axis[0];
  check_supported(axis.is_number_integer() && axis.get<int64_t>() == -1, kClassName, name, "axis=" + axis.dump(),
                  "only the last axis (-1) is");
  LayerNormalizationOptions o{.epsilon = c.value("epsilon", 1e-3),
                              .center = c.value("center", true),
                              .scale = c.value("scale", true),
                              .name = name};
  if (c.contains("beta_initializer")) o.beta_initializer = initializers::from_config(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = initializers::from_config(c["gamma_initializer"]);
  return std::make_shared<LayerNormalization>(o);
}

std::vector<Param> Normalization::params() {
  return {{"axis", -1, "the axis of the features: lockstep normalises each feature of the last (-1)"},
          {"mean", nullptr, "the features' means; None: adapt() computes them"},
          {"variance", nullptr, "the features' variances; None: adapt() computes them"},
          {"invert", false, "undo the normalisation instead"}};
}

std::shared_ptr<Normalization> Normalization::from_config(const nlohmann::json& c) {
  const std::string name = c.value("name", "");
  nlohmann::json axis = c.value("axis", nlohmann::json(-1));
  if (axis.is_array() && axis.size() == 1) axis = axis[0];
  check_supported(axis.is_number_integer() && axis.get<int64_t>() == -1, kClassName, name, "axis=" + axis.dump(),
                  "only the last axis (-1) is");
  auto statistic = [&](const char* key) -> std::optional<std::vector<double>> {
    const nlohmann::json v = c.value(key, nlohmann::json(nullptr));
    if (v.is_null()) return std::nullopt;
    LS_CHECK(v.is_number() || (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const auto& e) {
                                 return e.is_number();
                               })),
             ValueError, "Normalization \"", name, "\": ", key, " must be a number or a list of numbers, got ",
             v.dump().substr(0, 40));
    return v.is_number() ? std::vector<double>{v.get<double>()} : v.get<std::vector<double>>();
  };
  return std::make_shared<Normalization>(NormalizationOptions{.mean = statistic("mean"),
                                                              .variance = statistic("variance"),
                                                              .invert = c.value("invert", false),
                                                              .name = name});
}

std::vector<Param> LeakyReLU::params() {
  return {{"negative_slope", 0.3, "the slope below 0 (Keras 2 called it alpha)"}};
}

std::shared_ptr<LeakyReLU> LeakyReLU::from_config(const nlohmann::json& c) {
  const nlohmann::json slope = c.value("alpha", c.value("negative_slope", nlohmann::json(0.3)));  // Keras 2's alpha
  LS_CHECK(slope.is_number(), ValueError, "LeakyReLU: negative_slope must be a number, got ", slope.dump().substr(0, 40));
  return std::make_shared<LeakyReLU>(slope.get<double>(), c.value("name", ""));
}

std::vector<Param> Rescaling::params() {
  return {{"scale", kRequired, "the factor: one number"}, {"offset", 0.0, "added after scaling: one number"}};
}

std::shared_ptr<Rescaling> Rescaling::from_config(const nlohmann::json& c) {
  check_supported(c.at("scale").is_number() && c.value("offset", nlohmann::json(0.0)).is_number(), kClassName,
                  c.value("name", ""), "a per-channel scale or offset", "lockstep takes one number for each");
  return std::make_shared<Rescaling>(c["scale"].get<double>(), c.value("offset", 0.0), c.value("name", ""));
}

std::vector<Param> Add::params() { return {}; }
std::shared_ptr<Add> Add::from_config(const nlohmann::json& c) {
  return std::make_shared<Add>(c.value("name", ""));
}

std::vector<Param> Concatenate::params() { return {{"axis", -1, "the axis the inputs are joined along"}}; }
std::shared_ptr<Concatenate> Concatenate::from_config(const nlohmann::json& c) {
  return std::make_shared<Concatenate>(detail::json_int(c.value("axis", nlohmann::json(-1)), "axis"),
                                       c.value("name", ""));
}

}  // namespace layers
}  // namespace lockstep::keras
