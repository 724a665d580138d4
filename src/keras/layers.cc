// Keras layers: naming, weights, shape checks, and each layer's build/call/config.
#include "lockstep/keras/layers.h"

#include <cctype>
#include <map>
#include <mutex>
#include <type_traits>

#include "keras-impl.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/activations.h"

namespace lockstep::keras {

namespace {
std::mutex g_names_mutex;
std::map<std::string, int> g_name_counts;

}  // namespace

// "MaxPooling2D" -> "max_pooling2d", as Keras derives default layer names.
std::string detail::to_snake_case(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool upper = std::isupper(static_cast<unsigned char>(s[i]));
    const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(s[i - 1]));
    const bool next_lower = i + 1 < s.size() && std::islower(static_cast<unsigned char>(s[i + 1]));
    if (upper && i > 0 && (prev_lower || next_lower)) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  }
  return out;
}

namespace {
Shape without_batch(const Shape& s) { return Shape(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end())); }

}  // namespace

namespace detail {
std::string unique_name(const std::string& class_name) {
  std::string base = detail::to_snake_case(class_name);
  std::lock_guard lock(g_names_mutex);
  int n = g_name_counts[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::string with_none(const Shape& features) {
  std::string s = "(None";
  for (int64_t d : features.dims()) s += ", " + std::to_string(d);
  return s + ")";
}

namespace {
thread_local int64_t* t_weights_left = nullptr;  // elements a WeightBudget still allows, while one is alive
}  // namespace

WeightBudget::WeightBudget(int64_t max_elements) : left_(max_elements), outer_(t_weights_left) {
  t_weights_left = &left_;
}
WeightBudget::~WeightBudget() { t_weights_left = outer_; }

int64_t json_int(const nlohmann::json& j, const std::string& key) {
  LS_CHECK(j.is_number_integer() && (!j.is_number_unsigned() || j.get<uint64_t>() <= INT64_MAX), ValueError,
           "model config: \"", key, "\" is ", j.dump().substr(0, 40), ", expected an integer");
  return j.get<int64_t>();
}

std::vector<int64_t> json_ints(const nlohmann::json& j, const std::string& key) {
  LS_CHECK(j.is_array(), ValueError, "model config: \"", key, "\" is ", j.dump().substr(0, 40),
           ", expected a list of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& v : j) out.push_back(json_int(v, key));
  return out;
}

ConfigReader::ConfigReader(std::string class_name, const nlohmann::json& config)
    : cls_(std::move(class_name)), c_(config), name_(config.value("name", "")) {}

void ConfigReader::only(const char* key, std::initializer_list<nlohmann::json> allowed) const {
  if (!c_.contains(key) || c_[key].is_null()) return;
  for (const nlohmann::json& a : allowed)
    if (c_[key] == a) return;
  std::string expected;
  for (const nlohmann::json& a : allowed) expected += (expected.empty() ? "" : " or ") + a.dump();
  throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, "=", c_[key].dump().substr(0, 60),
                                " is not supported by lockstep (supported: ", expected.empty() ? "null" : expected,
                                "); change the model or file an issue"));
}

int64_t ConfigReader::square(const char* key) const {
  const nlohmann::json& v = c_.at(key);
  if (!v.is_array()) return json_int(v, key);
  LS_CHECK(!v.empty(), ValueError, "layer '", name_, "' (", cls_, "): ", key, " is an empty list");
  const int64_t n = json_int(v[0], key);
  for (const nlohmann::json& d : v)
    LS_CHECK(json_int(d, key) == n, ValueError, "layer '", name_, "' (", cls_, "): ", key, "=", v.dump(),
             " is not supported by lockstep (only equal sizes in both dimensions)");
  return n;
}

std::string ConfigReader::activation() const {
  const nlohmann::json a = c_.value("activation", nlohmann::json("linear"));
  LS_CHECK(a.is_string(), ValueError, "layer '", name_, "' (", cls_, "): activation ", a.dump().substr(0, 60),
           " is not supported by lockstep (only built-in activations by name)");
  return a == "linear" ? std::string() : a.get<std::string>();
}

InitializerRef ConfigReader::initializer(const char* key, const char* fallback) const {
  if (!c_.contains(key) || c_[key].is_null()) return InitializerRef(fallback);
  try {
    return initializers::from_config(c_[key]);
  } catch (const std::exception& e) {
    throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, ": ", e.what()));
  }
}

regularizers::RegularizerPtr ConfigReader::regularizer(const char* key) const {
  try {
    return regularizers::from_config(c_.value(key, nlohmann::json()));
  } catch (const std::exception& e) {
    throw ValueError(make_message("layer '", name_, "' (", cls_, "): ", key, ": ", e.what()));
  }
}

std::vector<Param> conv_params(int rank, const std::string& kernel_doc, const std::string& padding_doc) {
  // Keras writes a rank-1 size as a number, a larger one as a tuple; lockstep takes either spelling.
  const nlohmann::json one = rank == 1 ? nlohmann::json(1) : nlohmann::json(std::vector<int>(static_cast<size_t>(rank), 1));
  const nlohmann::json other = rank == 1 ? nlohmann::json::array({1}) : nlohmann::json(1);
  return std::vector<Param>{{"filters", kRequired, "the number of output channels"},
                            {"kernel_size", kRequired, kernel_doc},
                            {"strides", one, "the step between windows (a number, or one per axis)"},
                            {"padding", "valid", padding_doc},
                            channels_last(),
                            Param::fixed("dilation_rate", one, "not implemented by lockstep", {other}),
                            Param::fixed("groups", 1, "not implemented by lockstep"),
                            {"activation", nullptr, "applied to the output; None is linear"},
                            {"use_bias", true, "whether to add a bias vector"},
                            {"kernel_initializer", "glorot_uniform", "the kernel's initial values"},
                            {"bias_initializer", "zeros", "the bias's initial values"},
                            {"kernel_regularizer", nullptr, "a penalty on the kernel, added to the loss"}} +
         plain_kernel({"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
}
}  // namespace detail

void clear_session() {
  std::lock_guard lock(g_names_mutex);
  g_name_counts.clear();
}

// ---- Layer ----

Layer::Layer(std::string class_name, std::string name)
    : class_name_(std::move(class_name)), name_(name.empty() ? detail::unique_name(class_name_) : std::move(name)) {}

// The replicas of a strategy call the same model on their threads at once, and the first call builds each
// layer: one thread builds it while the others wait (TSan caught two replicas building one layer). Recursive
// because a layer's build may call another layer. Held only briefly once the layers are built.
static std::recursive_mutex g_build_mutex;

void Layer::ensure_built(const Shape& input_shape) {
  std::lock_guard lock(g_build_mutex);
  if (built_) return;
  build(input_shape);
  built_shape_ = input_shape;
  built_ = true;
}

void Layer::check_input(const Tensor& x) const {
  if (weights_.empty()) return;  // only layers with weights fix their input's feature shape
  const Shape got = without_batch(x.shape());
  LS_CHECK(got.rank() == built_shape_.rank() && got[-1] == built_shape_[-1], ValueError, "Input 0 of layer \"",
           name_, "\" is incompatible with the layer: expected shape=", detail::with_none(built_shape_), ", found shape=",
           x.shape().str());
}

Tensor Layer::operator()(const Tensor& x, CallOptions options) {
  LS_CHECK(x.rank() >= 1, ValueError, "layer \"", name_, "\" needs a batch of inputs (rank >= 1), got a scalar");
  ensure_built(without_batch(x.shape()));
  check_input(x);
  const DType compute = compute_dtype();
  const bool castable = x.dtype() == DType::float32 || x.dtype() == DType::bfloat16;
  return call(castable && x.dtype() != compute ? cast(x, compute) : x, options.training);
}

Tensor Layer::operator()(const std::vector<Tensor>& xs, CallOptions options) {
  LS_CHECK(!xs.empty() && xs[0].rank() >= 1, ValueError, "layer \"", name_, "\" needs a list of batched inputs, got ",
           xs.empty() ? "an empty list" : "a scalar");
  ensure_built(without_batch(xs[0].shape()));
  const DType compute = compute_dtype();
  std::vector<Tensor> cast_xs;
  for (const Tensor& x : xs) {
    const bool castable = x.dtype() == DType::float32 || x.dtype() == DType::bfloat16;
    cast_xs.push_back(castable && x.dtype() != compute ? cast(x, compute) : x);
  }
  return call_list(cast_xs, options.training);
}

Tensor Layer::call_list(const std::vector<Tensor>& xs, bool training) {
  LS_CHECK(xs.size() == 1, ValueError, "layer \"", name_, "\" (", class_name_, ") takes one input, got a list of ",
           xs.size());
  return call(xs[0], training);
}

Shape Layer::compute_output_shape_list(const std::vector<Shape>& shapes) const {
  LS_CHECK(shapes.size() == 1, ValueError, "layer \"", name_, "\" (", class_name_, ") takes one input, got a list of ",
           shapes.size());
  return compute_output_shape(shapes[0]);
}

LayerPtr Layer::clone() const {
  throw ValueError(make_message("layer \"", name_, "\" (", class_name_,
                                ") cannot be copied into a functional model: override clone(), or hold it in "
                                "a std::shared_ptr and call it through that"));
}

Tensor Layer::autocast(const Variable& v) const {
  const DType compute = compute_dtype();
  return v.dtype() == compute || v.dtype() != DType::float32 ? v.read() : cast(v.read(), compute);
}

nlohmann::json Layer::get_config() const {
  const nlohmann::json policy = {{"module", "keras"}, {"class_name", "DTypePolicy"},
                                 {"config", {{"name", dtype_policy_.name()}}}, {"registered_name", nullptr}};
  return {{"name", name_}, {"trainable", trainable()}, {"dtype", policy}};
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  for (const Variable& v : weights())
    if (v.trainable() && trainable()) out.push_back(v);
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> out;
  for (const Variable& v : weights())
    if (!v.trainable() || !trainable()) out.push_back(v);
  return out;
}

std::vector<Tensor> Layer::losses() const {
  std::vector<Tensor> out;
  for (const auto& [v, reg] : regularized_) out.push_back((*reg)(v));
  return out;
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const Variable& v : weights()) n += v.shape().numel();
  return n;
}

Variable Layer::add_weight(const std::string& name, const Shape& shape, const InitializerRef& initializer,
                           bool trainable, regularizers::RegularizerPtr regularizer, DType dtype) {
  if (int64_t* left = detail::t_weights_left) {
    int64_t n = 1;
    bool too_many = false;
    for (int64_t d : shape.dims()) too_many = too_many || d < 0 || __builtin_mul_overflow(n, d, &n);
    LS_CHECK(!too_many && n <= *left, DataLossError, "weight ", name_, "/", name, " of shape ", shape.str(),
             " needs more parameters than the saved weights hold: the model config is corrupt; save the model again");
    *left -= n;
  }
  Variable v((*initializer.ptr)(shape, dtype), {.name = name_ + "/" + name, .trainable = trainable});
  weights_.push_back(v);
  if (regularizer) regularized_.emplace_back(v, std::move(regularizer));
  return v;
}

distribute::ReplicaRandomPtr Layer::add_random_stream(const std::optional<uint64_t>& seed) {
  random_streams_.push_back(
      std::make_shared<distribute::ReplicaRandom>(seed ? Philox(*seed) : utils::next_generator()));
  return random_streams_.back();
}

namespace layers {

using detail::ConfigReader;
using detail::channels_last;
using detail::plain_kernel;
using detail::operator+;

// ---- InputLayer ----

InputLayer::InputLayer(Shape shape, DType dtype, std::string name)
    : Layer(kClassName, std::move(name)),
      shape_(std::move(shape)),
      dtype_(dtype),
      node_(std::make_shared<detail::Node>(detail::Node{.layer = nullptr,
                                                        .inputs = {},
                                                        .list_input = false,
                                                        .training = std::nullopt,
                                                        .shape = shape_,
                                                        .dtype = dtype_,
                                                        .input_name = this->name()})) {}

Tensor InputLayer::call(const Tensor& x, bool) {
  LS_CHECK(without_batch(x.shape()) == shape_, ValueError, "Input 0 of layer \"", name(),
           "\" is incompatible with the layer: expected shape=", detail::with_none(shape_), ", found shape=", x.shape().str());
  return x;
}

nlohmann::json InputLayer::get_config() const {
  std::vector<nlohmann::json> shape{nullptr};
  for (int64_t d : shape_.dims()) shape.push_back(d);
  return {{"name", name()}, {"batch_shape", shape}, {"dtype", std::string(dtype_name(dtype_))},
          {"sparse", false}, {"ragged", false}, {"optional", false}};
}

// ---- Reshape, Flatten ----

Reshape::Reshape(Shape target_shape, std::string name)
    : Layer(kClassName, std::move(name)), target_(std::move(target_shape)) {}

Shape Reshape::compute_output_shape(const Shape& input_shape) const {
  std::vector<int64_t> dims = target_.dims();
  int64_t known = 1;
  for (int64_t d : dims)
    if (d != -1) known *= d;
  for (int64_t& d : dims)
    if (d == -1) d = input_shape.numel() / std::max<int64_t>(known, 1);
  Shape out(dims);
  LS_CHECK(out.numel() == input_shape.numel(), ValueError, "Reshape \"", name(), "\": total size of the new array must be unchanged, input_shape = ",
           input_shape.str(), ", output_shape = ", target_.str());
  return out;
}

Tensor Reshape::call(const Tensor& x, bool) {
  const Shape features = compute_output_shape(without_batch(x.shape()));
  std::vector<int64_t> dims{x.dim(0)};
  dims.insert(dims.end(), features.dims().begin(), features.dims().end());
  return reshape(x, Shape(dims));
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["target_shape"] = target_.dims();
  return c;
}

Flatten::Flatten(std::string name) : Layer(kClassName, std::move(name)) {}
nlohmann::json Flatten::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = "channels_last";
  return c;
}
Shape Flatten::compute_output_shape(const Shape& input_shape) const { return Shape{input_shape.numel()}; }
Tensor Flatten::call(const Tensor& x, bool) { return reshape(x, Shape{x.dim(0), -1}); }

// ---- Conv2D ----

Conv2D::Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options)
    : Layer(kClassName, options.name), filters_(filters), kernel_size_(kernel_size), opt_(std::move(options)) {
  LS_CHECK(filters > 0 && kernel_size > 0 && opt_.strides > 0, ValueError, "Conv2D needs positive filters, kernel_size and strides, got ",
           filters, ", ", kernel_size, ", ", opt_.strides);
  conv_ = {.stride_h = opt_.strides, .stride_w = opt_.strides, .padding = raw_ops::padding_from_name(opt_.padding)};
  activation_ = activations::get(opt_.activation);  // an unknown name fails here, not at the first call
}

void Conv2D::build(const Shape& s) {
  LS_CHECK(s.rank() == 3, ValueError, "Conv2D \"", name(), "\" expects inputs of shape (batch, height, width, channels), got ",
           detail::with_none(s));
  kernel_ = add_weight("kernel", {kernel_size_, kernel_size_, s[2], filters_}, opt_.kernel_initializer, true,
                       opt_.kernel_regularizer);
  if (opt_.use_bias) bias_ = add_weight("bias", {filters_}, opt_.bias_initializer);
}

Shape Conv2D::compute_output_shape(const Shape& s) const {
  auto out = [&](int64_t in) {
    return conv_.padding == Padding::same ? (in + opt_.strides - 1) / opt_.strides : (in - kernel_size_) / opt_.strides + 1;
  };
  return Shape{out(s[0]), out(s[1]), filters_};
}

Tensor Conv2D::call(const Tensor& x, bool) {
  return activation_(nn::conv2d(x, autocast(kernel_), opt_.use_bias ? autocast(bias_) : Tensor(), conv_));
}

nlohmann::json Conv2D::get_config() const {
  return detail::conv_config(Layer::get_config(), 2, filters_, kernel_size_, opt_);
}

// ---- pooling ----

Pooling2D::Pooling2D(std::string class_name, int64_t pool_size, Pooling2DOptions options)
    : Layer(std::move(class_name), options.name) {
  int64_t stride = options.strides.value_or(pool_size);
  LS_CHECK(pool_size > 0 && stride > 0, ValueError, "pool_size and strides must be positive, got ", pool_size, " and ", stride);
  pool_ = {.pool_h = pool_size, .pool_w = pool_size, .stride_h = stride, .stride_w = stride,
           .padding = raw_ops::padding_from_name(options.padding)};
}

Shape Pooling2D::compute_output_shape(const Shape& s) const {
  auto out = [&](int64_t in) {
    return pool_.padding == Padding::same ? (in + pool_.stride_h - 1) / pool_.stride_h : (in - pool_.pool_h) / pool_.stride_h + 1;
  };
  return Shape{out(s[0]), out(s[1]), s[2]};
}

Tensor MaxPooling2D::call(const Tensor& x, bool) { return nn::max_pool2d(x, pool_); }

nlohmann::json Pooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["pool_size"] = {pool_.pool_h, pool_.pool_w};
  c["strides"] = {pool_.stride_h, pool_.stride_w};
  c["padding"] = pool_.padding == Padding::same ? "same" : "valid";
  c["data_format"] = "channels_last";
  return c;
}

Tensor AveragePooling2D::call(const Tensor& x, bool) { return nn::avg_pool2d(x, pool_); }

// ---- Dense ----

Dense::Dense(int64_t units, DenseOptions options)
    : Layer(kClassName, options.name), units_(units), opt_(std::move(options)) {
  LS_CHECK(units > 0, ValueError, "Dense needs a positive number of units, got ", units);
  activation_ = activations::get(opt_.activation);
}

void Dense::build(const Shape& s) {
  LS_CHECK(s.rank() >= 1, ValueError, "Dense \"", name(), "\" needs inputs of rank >= 2 (batch, features)");
  kernel_ = add_weight("kernel", {s[-1], units_}, opt_.kernel_initializer, true, opt_.kernel_regularizer);
  if (opt_.use_bias) bias_ = add_weight("bias", {units_}, opt_.bias_initializer);
}

Shape Dense::compute_output_shape(const Shape& s) const {
  std::vector<int64_t> dims = s.dims();
  dims.back() = units_;
  return Shape(dims);
}

Tensor Dense::call(const Tensor& x, bool) {
  const Tensor kernel = autocast(kernel_);
  Tensor y;
  if (x.rank() == 2) {
    y = matmul(x, kernel);
  } else {  // applied over the last axis, as Keras does for rank > 2
    std::vector<int64_t> dims = x.shape().dims();
    y = matmul(reshape(x, {-1, dims.back()}), kernel);
    dims.back() = units_;
    y = reshape(y, Shape(dims));
  }
  if (opt_.use_bias) y = y + autocast(bias_);
  return activation_(y);
}

nlohmann::json Dense::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = opt_.activation.empty() ? "linear" : opt_.activation;
  c["use_bias"] = opt_.use_bias;
  c["kernel_initializer"] = opt_.kernel_initializer.ptr->get_config();
  c["bias_initializer"] = opt_.bias_initializer.ptr->get_config();
  c["kernel_regularizer"] = opt_.kernel_regularizer ? opt_.kernel_regularizer->get_config() : nlohmann::json();
  for (const char* none : {"bias_regularizer", "kernel_constraint", "bias_constraint", "quantization_config"})
    c[none] = nullptr;
  return c;
}

// ---- Dropout ----

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer(kClassName, options.name), rate_(rate), seed_(options.seed), rng_(add_random_stream(options.seed)) {
  LS_CHECK(rate >= 0 && rate < 1, ValueError, "Dropout rate must be in [0, 1), got ", rate);
}

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  Tensor keep = cast(
      greater_equal(random_uniform(x.shape(), rng_->current(), 0, 1, x.dtype()), scalar(rate_, x.dtype())), x.dtype());
  return x * keep * (1.0 / (1.0 - rate_));
}

nlohmann::json Dropout::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["rate"] = rate_;
  c["seed"] = seed_ ? nlohmann::json(*seed_) : nlohmann::json();
  c["noise_shape"] = nullptr;
  return c;
}

// ---- BatchNormalization ----

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer(kClassName, options.name), opt_(std::move(options)) {}

void BatchNormalization::build(const Shape& s) {
  const Shape c{s[-1]};
  gamma_ = add_weight("gamma", c, "ones");
  beta_ = add_weight("beta", c, "zeros");
  moving_mean_ = add_weight("moving_mean", c, "zeros", false);
  moving_variance_ = add_weight("moving_variance", c, "ones", false);
}

Tensor BatchNormalization::call(const Tensor& x_in, bool training) {
  // As Keras does, the statistics of bfloat16 inputs are taken in float32 and only the result is rounded.
  const Tensor x = x_in.dtype() == DType::bfloat16 ? cast(x_in, DType::float32) : x_in;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) axes.push_back(d);
  Tensor mean, variance;
  if (training && trainable()) {  // a frozen BatchNormalization normalises with its moving statistics, as Keras'
    mean = reduce_mean(x, axes);
    variance = reduce_mean(square(x - mean), axes);
    NoGradGuard no_grad;
    // Under a strategy the moving statistics follow the mean of every replica's batch statistics (TF's MEAN
    // aggregation), so they stay identical on every replica and worker; one replica per worker writes them.
    Tensor batch_mean = mean, batch_variance = variance;
    distribute::Strategy& strategy = distribute::get_strategy();
    const bool replicated = distribute::in_replica_context() && strategy.num_replicas_in_sync() > 1;
    if (replicated) {
      std::vector<double> stats = raw_ops::cast(raw_ops::concat({mean, variance}, 0), DType::float64).to_vector<double>();
      strategy.all_reduce_sum(stats);
      for (double& v : stats) v /= strategy.num_replicas_in_sync();
      Tensor both = raw_ops::cast(from_vector(stats, Shape{static_cast<int64_t>(stats.size())}), mean.dtype());
      batch_mean = raw_ops::slice(both, {0}, {mean.numel()});
      batch_variance = raw_ops::slice(both, {mean.numel()}, {mean.numel()});
    }
    const double m = opt_.momentum;
    auto update = [&] {
      moving_mean_.assign(moving_mean_.value() * m + batch_mean * (1 - m));
      moving_variance_.assign(moving_variance_.value() * m + batch_variance * (1 - m));
    };
    if (replicated) strategy.merge_call(update);
    else update();
  } else {
    mean = moving_mean_.value();
    variance = moving_variance_.value();
  }
  const Tensor y = (x - mean) * rsqrt(variance + opt_.epsilon) * gamma_ + beta_;
  return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
}

nlohmann::json BatchNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = -1;
  c["momentum"] = opt_.momentum;
  c["epsilon"] = opt_.epsilon;
  c["center"] = true;
  c["scale"] = true;
  c["beta_initializer"] = initializers::Zeros()->get_config();
  c["gamma_initializer"] = initializers::Ones()->get_config();
  c["moving_mean_initializer"] = initializers::Zeros()->get_config();
  c["moving_variance_initializer"] = initializers::Ones()->get_config();
  for (const char* none : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint", "renorm_clipping"})
    c[none] = nullptr;
  c["synchronized"] = false;
  c["renorm"] = false;
  c["renorm_momentum"] = 0.99;
  return c;
}

// ---- Activation ----

Activation::Activation(std::string activation, std::string name)
    : Layer(kClassName, std::move(name)),
      name_of_activation_(std::move(activation)),
      activation_(activations::get(name_of_activation_)) {}

Tensor Activation::call(const Tensor& x, bool) { return activation_(x); }

nlohmann::json Activation::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["activation"] = name_of_activation_;
  return c;
}

// ---- from_config ----

std::vector<Param> InputLayer::params() {
  return {{"shape", nullptr, "the feature shape, without the batch axis (or batch_shape)"},
          {"batch_size", nullptr, "the batch size, when fixed"},
          {"dtype", nullptr, "the input's dtype (float32)"},
          Param::fixed("sparse", nullptr, "lockstep's inputs are dense", {false}),
          Param::fixed("ragged", nullptr, "lockstep's inputs are not ragged", {false}),
          {"batch_shape", nullptr, "the shape with the batch axis first"},
          Param::fixed("input_tensor", nullptr, "lockstep makes its own input tensor"),
          Param::fixed("optional", false, "lockstep's inputs are always given"),
          {"name", nullptr, "the layer's name"}};
}

std::shared_ptr<InputLayer> InputLayer::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  // Keras 2 wrote batch_input_shape, Keras 3 writes batch_shape; a program may give shape (and batch_size).
  nlohmann::json batch_shape = c.contains("batch_input_shape") ? c["batch_input_shape"] : c.value("batch_shape", nlohmann::json());
  if (batch_shape.is_null() && c.contains("shape") && c["shape"].is_array()) {
    batch_shape = nlohmann::json::array({c.value("batch_size", nlohmann::json())});
    for (const nlohmann::json& d : c["shape"]) batch_shape.push_back(d);
  }
  LS_CHECK(batch_shape.is_array(), ValueError, "InputLayer '", r.name(), "': give its shape (or batch_shape)");
  std::vector<int64_t> shape;
  for (size_t i = 1; i < batch_shape.size(); ++i) shape.push_back(detail::json_int(batch_shape[i], "batch_shape"));
  return std::make_shared<InputLayer>(Shape(shape), dtype_from_name(c.value("dtype", "float32")), r.name());
}

std::vector<Param> Reshape::params() {
  return {{"target_shape", kRequired, "the output's shape without the batch axis; one -1 is inferred"}};
}
std::shared_ptr<Reshape> Reshape::from_config(const nlohmann::json& c) {
  return std::make_shared<Reshape>(Shape(detail::json_ints(c.at("target_shape"), "target_shape")), c.value("name", ""));
}

std::vector<Param> Flatten::params() { return {channels_last()}; }
std::shared_ptr<Flatten> Flatten::from_config(const nlohmann::json& c) {
  return std::make_shared<Flatten>(c.value("name", ""));
}


std::vector<Param> Conv2D::params() {
  return detail::conv_params(2, "the window's side (n or [n, n]: lockstep's windows are square)",
                             "\"valid\" (no padding) or \"same\" (the output keeps the input's size)");
}

std::shared_ptr<Conv2D> Conv2D::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Conv2D>(
      detail::json_int(c.at("filters"), "filters"), r.square("kernel_size"),
      Conv2DOptions{.strides = r.square("strides"),
                    .padding = c.value("padding", "valid"),
                    .activation = r.activation(),
                    .use_bias = c.value("use_bias", true),
                    .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                    .bias_initializer = r.initializer("bias_initializer", "zeros"),
                    .kernel_regularizer = r.regularizer("kernel_regularizer"),
                    .name = r.name()});
}

std::vector<Param> Dense::params() {
  return std::vector<Param>{{"units", kRequired, "the width of the output"},
                            {"activation", nullptr, "applied to the output; None is linear"},
                            {"use_bias", true, "whether to add a bias vector"},
                            {"kernel_initializer", "glorot_uniform", "the kernel's initial values"},
                            {"bias_initializer", "zeros", "the bias's initial values"},
                            {"kernel_regularizer", nullptr, "a penalty on the kernel, added to the loss"}} +
         plain_kernel({"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint", "lora_rank",
                       "lora_alpha", "quantization_config"});
}

std::shared_ptr<Dense> Dense::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Dense>(
      detail::json_int(c.at("units"), "units"),
      DenseOptions{.activation = r.activation(),
                   .use_bias = c.value("use_bias", true),
                   .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                   .bias_initializer = r.initializer("bias_initializer", "zeros"),
                   .kernel_regularizer = r.regularizer("kernel_regularizer"),
                   .name = r.name()});
}

namespace {
template <typename Pooling>
std::shared_ptr<Pooling> pooling_from_config(const nlohmann::json& c) {
  const ConfigReader r(Pooling::kClassName, c);
  const bool strided = c.contains("strides") && !c["strides"].is_null();
  return std::make_shared<Pooling>(
      r.square("pool_size"), Pooling2DOptions{.strides = strided ? std::optional(r.square("strides")) : std::nullopt,
                                              .padding = c.value("padding", "valid"),
                                              .name = r.name()});
}
}  // namespace

namespace {
// Pooling's arguments; `pool_size` is Keras' default pool size (AveragePooling2D has none).
std::vector<Param> pooling_params(const nlohmann::json& pool_size) {
  return {{"pool_size", pool_size, "the window's side (n or [n, n]: lockstep's windows are square)"},
          {"strides", nullptr, "the step between windows; None is pool_size"},
          {"padding", "valid", "\"valid\" or \"same\""},
          channels_last(),
          {"name", nullptr, "the layer's name"}};
}
}  // namespace

std::vector<Param> MaxPooling2D::params() { return pooling_params({2, 2}); }
std::vector<Param> AveragePooling2D::params() { return pooling_params(kRequired); }
std::shared_ptr<MaxPooling2D> MaxPooling2D::from_config(const nlohmann::json& c) {
  return pooling_from_config<MaxPooling2D>(c);
}
std::shared_ptr<AveragePooling2D> AveragePooling2D::from_config(const nlohmann::json& c) {
  return pooling_from_config<AveragePooling2D>(c);
}

std::vector<Param> Dropout::params() {
  return {{"rate", kRequired, "the fraction of the inputs set to 0 in training"},
          Param::fixed("noise_shape", nullptr, "not implemented by lockstep"),
          {"seed", nullptr, "the seed of the layer's random stream; None draws one from the global seed"}};
}

std::shared_ptr<Dropout> Dropout::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  std::optional<uint64_t> seed;
  if (c.contains("seed") && !c["seed"].is_null()) seed = static_cast<uint64_t>(detail::json_int(c["seed"], "seed"));
  return std::make_shared<Dropout>(c.at("rate").get<double>(), DropoutOptions{.seed = seed, .name = r.name()});
}

std::vector<Param> BatchNormalization::params() {
  const nlohmann::json zeros = initializers::Zeros()->get_config(), ones = initializers::Ones()->get_config();
  return std::vector<Param>{
             Param::fixed("axis", -1, "lockstep normalises the last axis", {nlohmann::json::array({-1})}),
             {"momentum", 0.99, "the moving statistics' decay"},
             {"epsilon", 0.001, "added to the variance"},
             Param::fixed("center", true, "lockstep's BatchNormalization always has beta"),
             Param::fixed("scale", true, "lockstep's BatchNormalization always has gamma"),
             Param::fixed("beta_initializer", "zeros", "lockstep starts beta at 0", {zeros}),
             Param::fixed("gamma_initializer", "ones", "lockstep starts gamma at 1", {ones}),
             Param::fixed("moving_mean_initializer", "zeros", "lockstep starts the moving mean at 0", {zeros}),
             Param::fixed("moving_variance_initializer", "ones", "lockstep starts the moving variance at 1", {ones})} +
         plain_kernel({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) +
         std::vector<Param>{Param::fixed("renorm", false, "not implemented by lockstep"),
                            Param::fixed("renorm_clipping", nullptr, "not implemented by lockstep"),
                            Param::fixed("renorm_momentum", 0.99, "not implemented by lockstep"),
                            {"synchronized", false, "lockstep's statistics are each replica's (as Keras' default)"}};
}

std::shared_ptr<BatchNormalization> BatchNormalization::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<BatchNormalization>(BatchNormalizationOptions{
      .momentum = c.value("momentum", 0.99), .epsilon = c.value("epsilon", 1e-3), .name = r.name()});
}

std::vector<Param> Activation::params() {
  return {{"activation", kRequired, "the activation's name (relu, softmax, sigmoid, tanh, linear)"}};
}

std::shared_ptr<Activation> Activation::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Activation>(r.activation().empty() ? "linear" : r.activation(), r.name());
}

// ---- the registry ----

namespace {
// A layer config's "dtype": a policy name, or Keras 3's serialised DTypePolicy object.
mixed_precision::DTypePolicy policy_from_config(const nlohmann::json& dtype) {
  if (dtype.is_object()) return dtype.at("config").at("name").get<std::string>();
  return dtype.get<std::string>();
}

// Layer class L's registration: its from_config, plus what every layer's config shares (an InputLayer's dtype is
// its input's, not a policy).
template <typename L>
Registry<LayerPtr>::Entry entry() {
  return {L::kClassName,
          [](const nlohmann::json& own) -> LayerPtr {
            if constexpr (std::is_same_v<L, InputLayer>) {
              return L::from_config(own);
            } else {
              const nlohmann::json c = complete_config(make_message("layer '", own.value("name", ""), "' (", L::kClassName, ")"), base_params(), own);
              LayerPtr layer = L::from_config(c);
              if (c.contains("dtype")) layer->set_dtype_policy(policy_from_config(c["dtype"]));
              layer->set_trainable(c.value("trainable", true));
              return layer;
            }
          },
          {},
          L::params()};
}
}  // namespace

std::vector<Param> base_params() {
  return {Param::fixed("activity_regularizer", nullptr, "not implemented by lockstep"),
          {"trainable", true, "whether fit() updates the layer's weights"},
          {"dtype", nullptr, "the dtype policy: float32 or mixed_bfloat16 (None: the global policy)"},
          {"autocast", true, "lockstep casts a mixed policy's inputs always"},
          {"name", nullptr, "the layer's name; None makes a unique one from the class name"}};
}

const Registry<LayerPtr>& registry() {
  // Every layer class, once; a list rather than registrar objects (lockstep/keras/registry.h says why).
  static const Registry<LayerPtr> r(
      "layer", {entry<InputLayer>(), entry<Reshape>(), entry<Flatten>(), entry<Conv2D>(), entry<MaxPooling2D>(),
                entry<AveragePooling2D>(), entry<GlobalAveragePooling2D>(), entry<GlobalMaxPooling2D>(), entry<Dense>(),
                entry<Dropout>(), entry<BatchNormalization>(), entry<LayerNormalization>(), entry<Activation>(),
                entry<Embedding>(), entry<Normalization>(), entry<LeakyReLU>(), entry<Rescaling>(), entry<Add>(), entry<Concatenate>(), entry<UpSampling2D>(), entry<Conv1D>()});
  return r;
}

LayerPtr from_config(const nlohmann::json& j) {
  const std::string cls = j.at("class_name");
  const nlohmann::json& c = j.at("config");
  const Registry<LayerPtr>::Entry* entry = registry().find(cls);
  LS_CHECK(entry, ValueError, "layer '", c.value("name", ""), "': ", registry().unsupported(cls));
  try {
    return entry->from_config(
        complete_config(make_message("layer '", c.value("name", ""), "' (", cls, ")"), entry->params, c));
  } catch (const ValueError& e) {  // a constructor's check (units > 0, a known activation) with the layer named
    if (std::string(e.what()).starts_with("layer '")) throw;
    throw ValueError(make_message("layer '", c.value("name", ""), "' (", cls, "): ", e.what()));
  }
}

nlohmann::json serialize(const Layer& layer, const Shape* input_shape) {
  nlohmann::json j = {{"module", "keras.layers"}, {"class_name", layer.class_name()}, {"config", layer.get_config()},
                      {"registered_name", nullptr}};
  // Keras records the build shape of layers that build something (weights, or Flatten's input spec).
  if (input_shape && (!layer.weights().empty() || layer.class_name() == "Flatten")) {
    std::vector<nlohmann::json> shape{nullptr};
    for (int64_t d : input_shape->dims()) shape.push_back(d);
    j["build_config"] = {{"input_shape", shape}};
  }
  return j;
}

}  // namespace layers
}  // namespace lockstep::keras
