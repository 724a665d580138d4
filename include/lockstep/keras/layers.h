// Keras layers: each has build(input_shape), call(x, training), its weights and get_config(); gradients
// come from the ops they call. Shapes given to layers exclude the batch dimension, as in Keras.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/autograd/ops.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/distribute/strategy/replica_random.h"
#include "lockstep/keras/activations.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/mixed_precision.h"
#include "lockstep/keras/registry.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {

struct CallOptions {
  bool training = false;
};

class Layer;
using LayerPtr = std::shared_ptr<Layer>;
namespace detail {
struct Node;
}
namespace layers {
class InputLayer;
}

// A symbolic tensor (Keras' KerasTensor): the output of a layer called on a model input or on another
// symbolic tensor, recorded so that keras::Model(inputs, outputs) can run the graph. Its shape excludes the
// batch dimension.
class KerasTensor {
 public:
  // A model input used as a tensor: Dense(10)(keras::Input({4})).
  KerasTensor(const layers::InputLayer& input);
  explicit KerasTensor(std::shared_ptr<const detail::Node> node) : node_(std::move(node)) {}
  const Shape& shape() const;
  DType dtype() const;
  const std::shared_ptr<const detail::Node>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::Node> node_;
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  explicit Layer(std::string class_name, std::string name = "");
  virtual ~Layer() = default;

  const std::string& name() const { return name_; }
  // The Keras class name: "Conv2D", "Dense", ...
  const std::string& class_name() const { return class_name_; }
  bool built() const { return built_; }
  // Creates the weights for `input_shape` (without batch) once; calling again is a no-op.
  void ensure_built(const Shape& input_shape);
  // Runs the layer, building it on first use.
  Tensor operator()(const Tensor& x, CallOptions options = {});
  // Runs a layer that takes several inputs (Add, Concatenate).
  Tensor operator()(const std::vector<Tensor>& xs, CallOptions options = {});
  // Records a call on symbolic tensors for a functional Model, building the layer for their shapes. The graph
  // holds this layer: the object itself when a shared_ptr owns it, else one copy per object (sharing the
  // weights), so Dense(64)(x) on a temporary is safe and calling one layer object twice shares its weights.
  // `training` set fixes the mode this call runs in whatever the model's (Keras 2's base(x, training=False), which
  // keeps a fine-tuned base model's BatchNormalization in inference mode).
  KerasTensor operator()(const KerasTensor& x, std::optional<bool> training = std::nullopt);
  KerasTensor operator()(const std::vector<KerasTensor>& xs, std::optional<bool> training = std::nullopt);

  virtual Shape compute_output_shape(const Shape& input_shape) const { return input_shape; }
  // For layers that take several inputs; the default takes exactly one.
  virtual Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const;
  // A copy on the heap sharing the weights (the functional API's handle for a layer object).
  virtual LayerPtr clone() const;
  virtual nlohmann::json get_config() const;

  // The global policy when the layer was made, unless set (Keras' dtype= argument): float32 or bfloat16 inputs
  // are cast to its compute dtype before call(), weights are read in it, and outputs come in it.
  const mixed_precision::DTypePolicy& dtype_policy() const { return dtype_policy_; }
  DType compute_dtype() const { return dtype_policy_.compute_dtype(); }
  void set_dtype_policy(mixed_precision::DTypePolicy policy) { dtype_policy_ = std::move(policy); }

  // Virtual, with losses() and the split below, for a layer whose weights live elsewhere: a Python layer or model.
  virtual const std::vector<Variable>& weights() const { return weights_; }
  virtual std::vector<Variable> trainable_weights() const;
  virtual std::vector<Variable> non_trainable_weights() const;
  // Keras' layer.trainable: a frozen layer's weights are all non-trainable (fit and the optimizer leave them
  // alone), and a frozen BatchNormalization runs in inference mode. Copies of a layer share the setting, as they
  // share the weights; set it before compile, as Keras asks.
  bool trainable() const { return *trainable_; }
  void set_trainable(bool trainable) { *trainable_ = trainable; }
  // Regularization penalties of this layer's weights, computed now (differentiable).
  virtual std::vector<Tensor> losses() const;
  int64_t count_params() const;
  // The random streams call() draws from, in a fixed order: the layer's own (add_random_stream), or a Python
  // layer's sublayers'. Checkpoints of a model save every replica's position in each, per worker.
  virtual std::vector<distribute::ReplicaRandomPtr> random_streams() const { return random_streams_; }

 protected:
  virtual void build(const Shape& /*input_shape*/) {}
  virtual Tensor call(const Tensor& x, bool training) = 0;
  // For layers that take several inputs; the default takes exactly one.
  virtual Tensor call_list(const std::vector<Tensor>& xs, bool training);
  Variable add_weight(const std::string& name, const Shape& shape, const InitializerRef& initializer,
                      bool trainable = true, regularizers::RegularizerPtr regularizer = nullptr,
                      DType dtype = DType::float32);
  // A random stream for call() (Dropout's mask), made in the constructor: one Philox stream of `seed` per replica
  // (keras.utils' next generator when there is none). Copies of the layer share it, as they share weights; model
  // checkpoints save and restore it, so a random layer needs nothing more to resume bitwise.
  distribute::ReplicaRandomPtr add_random_stream(const std::optional<uint64_t>& seed);
  // Checks that a built layer is called with the feature shape it was built for.
  void check_input(const Tensor& x) const;
  // A weight's value in the compute dtype (Keras' autocasting), recorded so its gradient reaches the variable.
  Tensor autocast(const Variable& v) const;

 private:
  std::string class_name_, name_;
  mixed_precision::DTypePolicy dtype_policy_ = mixed_precision::global_policy();
  bool built_ = false;
  std::shared_ptr<bool> trainable_ = std::make_shared<bool>(true);
  Shape built_shape_;
  std::vector<Variable> weights_;
  std::vector<distribute::ReplicaRandomPtr> random_streams_;
  std::vector<std::pair<Variable, regularizers::RegularizerPtr>> regularized_;
  std::weak_ptr<Layer> graph_copy_;  // the copy a functional graph holds of this object, while it lives
  // A symbolic call's node; list_input when called with a list (merging layers).
  KerasTensor record_call(const std::vector<KerasTensor>& xs, bool list_input, std::optional<bool> training);
};

namespace detail {
// One call of a layer on symbolic tensors: a node of the graph a functional Model runs.
struct Node {
  LayerPtr layer;  // null for a model input
  std::vector<KerasTensor> inputs;
  bool list_input = false;  // called with a list (merging layers)
  std::optional<bool> training;  // fixed by the symbolic call, else the model's
  Shape shape;              // the output's, without batch
  DType dtype = DType::float32;
  std::string input_name;  // a model input: its InputLayer's name
  uint64_t id = 0;         // increasing with each call: orders one layer's nodes as Keras numbers them
};
}  // namespace detail

// Anything a Sequential model accepts: a layer object by value (layers::Dense(10)) or a shared pointer.
struct LayerHandle {
  LayerPtr ptr;
  template <typename L, typename = std::enable_if_t<std::is_base_of_v<Layer, L>>>
  LayerHandle(L layer) : ptr(std::make_shared<L>(std::move(layer))) {}
  template <typename L> LayerHandle(std::shared_ptr<L> layer) : ptr(std::move(layer)) {}
};

namespace layers {

// Each layer class has kClassName, its Keras class name, params(), its Keras arguments with Keras' defaults, and
// from_config(config), the layer a complete config (every argument of params() present) describes (Keras'
// cls.from_config). registry() lists the classes; layers::from_config (at the end) reads a serialised layer through
// it and adds what every layer shares (base_params(): trainable, the dtype policy).

// The keyword arguments of every layer (keras.layers.Layer.__init__).
std::vector<Param> base_params();

// The model's input: its feature shape (without batch) and dtype. keras.Input(shape) makes one.
class InputLayer : public Layer {
 public:
  static constexpr const char* kClassName = "InputLayer";
  static std::shared_ptr<InputLayer> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<InputLayer>(*this); }
  explicit InputLayer(Shape shape, DType dtype = DType::float32, std::string name = "");
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  friend class lockstep::keras::KerasTensor;
  Shape shape_;
  DType dtype_;
  std::shared_ptr<const detail::Node> node_;  // the symbolic tensor it stands for; copies share it
};

class Reshape : public Layer {
 public:
  static constexpr const char* kClassName = "Reshape";
  static std::shared_ptr<Reshape> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Reshape>(*this); }
  explicit Reshape(Shape target_shape, std::string name = "");
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Shape target_;
};

class Flatten : public Layer {
 public:
  static constexpr const char* kClassName = "Flatten";
  static std::shared_ptr<Flatten> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Flatten>(*this); }
  explicit Flatten(std::string name = "");
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

struct Conv2DOptions {
  int64_t strides = 1;
  std::string padding = "valid";
  std::string activation = "";
  bool use_bias = true;
  InitializerRef kernel_initializer = "glorot_uniform";
  InitializerRef bias_initializer = "zeros";
  regularizers::RegularizerPtr kernel_regularizer = nullptr;
  std::string name = "";
};
// 2-D convolution over NHWC input with an HWIO kernel [k, k, in, filters].
class Conv2D : public Layer {
 public:
  static constexpr const char* kClassName = "Conv2D";
  static std::shared_ptr<Conv2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Conv2D>(*this); }
  Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options = {});
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t filters_, kernel_size_;
  Conv2DOptions opt_;
  Conv2dParams conv_;
  activations::Activation activation_;
  Variable kernel_, bias_;
};

struct Pooling2DOptions {
  std::optional<int64_t> strides = std::nullopt;  // defaults to pool_size
  std::string padding = "valid";
  std::string name = "";
};
// What MaxPooling2D and AveragePooling2D share: geometry, output shape, config.
class Pooling2D : public Layer {
 public:
  Pooling2D(std::string class_name, int64_t pool_size, Pooling2DOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Pool2dOptions pool_;
};
class MaxPooling2D : public Pooling2D {
 public:
  static constexpr const char* kClassName = "MaxPooling2D";
  static std::shared_ptr<MaxPooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<MaxPooling2D>(*this); }
  explicit MaxPooling2D(int64_t pool_size = 2, Pooling2DOptions options = {})
      : Pooling2D(kClassName, pool_size, std::move(options)) {}

 protected:
  Tensor call(const Tensor& x, bool training) override;
};
class AveragePooling2D : public Pooling2D {
 public:
  static constexpr const char* kClassName = "AveragePooling2D";
  static std::shared_ptr<AveragePooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<AveragePooling2D>(*this); }
  explicit AveragePooling2D(int64_t pool_size = 2, Pooling2DOptions options = {})
      : Pooling2D(kClassName, pool_size, std::move(options)) {}

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

struct DenseOptions {
  std::string activation = "";
  bool use_bias = true;
  InitializerRef kernel_initializer = "glorot_uniform";
  InitializerRef bias_initializer = "zeros";
  regularizers::RegularizerPtr kernel_regularizer = nullptr;
  std::string name = "";
};
// y = activation(x @ kernel + bias) over the last axis; kernel [in, units].
class Dense : public Layer {
 public:
  static constexpr const char* kClassName = "Dense";
  static std::shared_ptr<Dense> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Dense>(*this); }
  explicit Dense(int64_t units, DenseOptions options = {});
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t units_;
  DenseOptions opt_;
  activations::Activation activation_;
  Variable kernel_, bias_;
};

struct DropoutOptions {
  std::optional<uint64_t> seed = std::nullopt;
  std::string name = "";
};
// Zeroes a fraction `rate` of inputs while training and scales the rest by 1 / (1 - rate).
class Dropout : public Layer {
 public:
  static constexpr const char* kClassName = "Dropout";
  static std::shared_ptr<Dropout> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Dropout>(*this); }
  explicit Dropout(double rate, DropoutOptions options = {});
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double rate_;
  std::optional<uint64_t> seed_;  // for get_config
  distribute::ReplicaRandomPtr rng_;
};

struct BatchNormalizationOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  std::string name = "";
};
// Normalises the last axis with batch statistics while training and moving statistics otherwise.
class BatchNormalization : public Layer {
 public:
  static constexpr const char* kClassName = "BatchNormalization";
  static std::shared_ptr<BatchNormalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<BatchNormalization>(*this); }
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  BatchNormalizationOptions opt_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

class Activation : public Layer {
 public:
  static constexpr const char* kClassName = "Activation";
  static std::shared_ptr<Activation> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Activation>(*this); }
  explicit Activation(std::string activation, std::string name = "");
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string name_of_activation_;
  activations::Activation activation_;
};

// ---- layers of typical Keras image and text models (src/keras/layers_more.cc) ----

struct GlobalPooling2DOptions {
  bool keepdims = false;                      // keep the pooled axes as size 1: (batch, 1, 1, channels)
  std::string data_format = "channels_last";  // the only layout lockstep has
  std::string name = "";
};
// Pools NHWC inputs over height and width: (batch, channels), or (batch, 1, 1, channels) with keepdims.
class GlobalPooling2D : public Layer {
 public:
  GlobalPooling2D(std::string class_name, GlobalPooling2DOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  bool keepdims_;
};
class GlobalAveragePooling2D : public GlobalPooling2D {
 public:
  static constexpr const char* kClassName = "GlobalAveragePooling2D";
  static std::shared_ptr<GlobalAveragePooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit GlobalAveragePooling2D(GlobalPooling2DOptions options = {})
      : GlobalPooling2D(kClassName, std::move(options)) {}
  LayerPtr clone() const override { return std::make_shared<GlobalAveragePooling2D>(*this); }

 protected:
  Tensor call(const Tensor& x, bool training) override;
};
class GlobalMaxPooling2D : public GlobalPooling2D {
 public:
  static constexpr const char* kClassName = "GlobalMaxPooling2D";
  static std::shared_ptr<GlobalMaxPooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit GlobalMaxPooling2D(GlobalPooling2DOptions options = {}) : GlobalPooling2D(kClassName, std::move(options)) {}
  LayerPtr clone() const override { return std::make_shared<GlobalMaxPooling2D>(*this); }

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

struct EmbeddingOptions {
  InitializerRef embeddings_initializer = initializers::RandomUniform(-0.05, 0.05);  // Keras' "uniform"
  bool mask_zero = false;  // masking is not supported: true is an error
  std::string name = "";
};
// Looks up rows of an [input_dim, output_dim] table: integer inputs (batch, ...) give (batch, ..., output_dim).
// Float inputs are cast to integers, as Keras does; an index outside [0, input_dim) is an error.
class Embedding : public Layer {
 public:
  static constexpr const char* kClassName = "Embedding";
  static std::shared_ptr<Embedding> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  LayerPtr clone() const override { return std::make_shared<Embedding>(*this); }
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& embeddings() const { return embeddings_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions opt_;
  Variable embeddings_;
};

struct LayerNormalizationOptions {
  int64_t axis = -1;  // only the last axis is supported
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  InitializerRef beta_initializer = "zeros";
  InitializerRef gamma_initializer = "ones";
  std::string name = "";
};
// Normalises each example over its last axis: (x - mean) / sqrt(variance + epsilon) * gamma + beta.
class LayerNormalization : public Layer {
 public:
  static constexpr const char* kClassName = "LayerNormalization";
  static std::shared_ptr<LayerNormalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  LayerPtr clone() const override { return std::make_shared<LayerNormalization>(*this); }
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  LayerNormalizationOptions opt_;
  Variable gamma_, beta_;
};

struct NormalizationOptions {
  // Given statistics (one number, or one per feature of the last axis); without them the layer holds mean and
  // variance as non-trainable weights that adapt() sets from data.
  std::optional<std::vector<double>> mean, variance;
  bool invert = false;  // x * std + mean: undoes the normalisation
  std::string name = "";
};
// Keras' Normalization over the last axis (axis=-1): (x - mean) / max(sqrt(variance), 1e-7) per feature.
class Normalization : public Layer {
 public:
  static constexpr const char* kClassName = "Normalization";
  static std::shared_ptr<Normalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Normalization(NormalizationOptions options = {});
  LayerPtr clone() const override { return std::make_shared<Normalization>(*this); }
  nlohmann::json get_config() const override;
  // Keras' layer.adapt(data): mean and variance of `data` [N, ..., features] over every axis but the last,
  // accumulated in double; builds the layer for data's shape first.
  void adapt(const Tensor& data);

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  NormalizationOptions opt_;
  Tensor given_mean_, given_variance_;  // the given statistics as float32 tensors, made once
  Variable mean_, variance_;
};

// x where x >= 0, else x * negative_slope (Keras' LeakyReLU; Keras 2 called the slope alpha).
class LeakyReLU : public Layer {
 public:
  static constexpr const char* kClassName = "LeakyReLU";
  static std::shared_ptr<LeakyReLU> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit LeakyReLU(double negative_slope = 0.3, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<LeakyReLU>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double negative_slope_;
};

// y = x * scale + offset (images from [0, 255] to [0, 1] with scale = 1 / 255).
class Rescaling : public Layer {
 public:
  static constexpr const char* kClassName = "Rescaling";
  static std::shared_ptr<Rescaling> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Rescaling(double scale, double offset = 0.0, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<Rescaling>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double scale_, offset_;
};

// What the merging layers share: they take a list of at least two tensors, called as layer({a, b}).
class Merge : public Layer {
 public:
  using Layer::Layer;
  Shape compute_output_shape(const Shape& input_shape) const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;
};
// The elementwise sum of inputs of one shape.
class Add : public Merge {
 public:
  static constexpr const char* kClassName = "Add";
  static std::shared_ptr<Add> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Add(std::string name = "") : Merge(kClassName, std::move(name)) {}
  LayerPtr clone() const override { return std::make_shared<Add>(*this); }
  Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const override;

 protected:
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;
};
// Joins inputs along `axis` (counted with the batch axis, as in Keras; -1 = the last); the other axes must match.
class Concatenate : public Merge {
 public:
  static constexpr const char* kClassName = "Concatenate";
  static std::shared_ptr<Concatenate> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Concatenate(int64_t axis = -1, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<Concatenate>(*this); }
  Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;

 private:
  int64_t axis_;
};

// ---- layers in files of their own ----

struct UpSampling2DOptions {
  std::string interpolation = "nearest";      // or "bilinear" (tf.image.resize's, with half-pixel centers)
  std::string data_format = "channels_last";  // the only layout lockstep has
  std::string name = "";
};
// Enlarges NHWC images by whole factors (src/keras/up_sampling2d.cc): (batch, rows, cols, channels) gives
// (batch, rows * size[0], cols * size[1], channels).
class UpSampling2D : public Layer {
 public:
  static constexpr const char* kClassName = "UpSampling2D";
  static std::shared_ptr<UpSampling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit UpSampling2D(int64_t size = 2, UpSampling2DOptions options = {})
      : UpSampling2D({size, size}, std::move(options)) {}
  UpSampling2D(std::array<int64_t, 2> size, UpSampling2DOptions options = {});
  LayerPtr clone() const override { return std::make_shared<UpSampling2D>(*this); }
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::array<int64_t, 2> size_;
  UpSampling2DOptions opt_;
};

// Every layer class lockstep has, by Keras class name.
const Registry<LayerPtr>& registry();
// Makes a layer from its {"class_name", "config"} (Sequential.from_config uses it). A layer class or option
// lockstep does not have (Conv2D's dilation_rate, channels_first, a constraint...) is a ValueError naming both.
LayerPtr from_config(const nlohmann::json& config);
// Keras 3's serialised layer: {"module", "class_name", "config", "registered_name"}, with "build_config" when
// `input_shape` (without batch) is given.
nlohmann::json serialize(const Layer& layer, const Shape* input_shape = nullptr);

}  // namespace layers

// keras.Input: the input of a model, for features of `shape` (without batch): the first layer of a Sequential,
// or a symbolic tensor (it converts to KerasTensor) that layers are called on for a functional Model.
inline layers::InputLayer Input(Shape shape, DType dtype = DType::float32) { return layers::InputLayer(std::move(shape), dtype); }

// Forgets the layer-name counters, so the next Conv2D is "conv2d" again (keras.backend.clear_session).
void clear_session();

}  // namespace lockstep::keras

// Layers declared in headers of their own (one class per file pair, include/lockstep/keras/layers/).
#include "lockstep/keras/layers/conv1d.h"
