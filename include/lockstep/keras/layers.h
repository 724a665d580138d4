// Keras layers: each has build(input_shape), call(x, training), its weights and get_config(); gradients
// come from the ops they call. Shapes given to layers exclude the batch dimension, as in Keras.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/autograd/ops.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/keras/activations.h"
#include "lockstep/keras/initializers.h"
#include "lockstep/keras/mixed_precision.h"
#include "lockstep/keras/regularizers.h"

namespace lockstep::keras {

struct CallOptions {
  bool training = false;
};

class Layer {
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

  virtual Shape compute_output_shape(const Shape& input_shape) const { return input_shape; }
  virtual nlohmann::json get_config() const;

  // The global policy when the layer was made, unless set (Keras' dtype= argument): float32 or bfloat16 inputs
  // are cast to its compute dtype before call(), weights are read in it, and outputs come in it.
  const mixed_precision::DTypePolicy& dtype_policy() const { return dtype_policy_; }
  DType compute_dtype() const { return dtype_policy_.compute_dtype(); }
  void set_dtype_policy(mixed_precision::DTypePolicy policy) { dtype_policy_ = std::move(policy); }

  const std::vector<Variable>& weights() const { return weights_; }
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  // Regularization penalties of this layer's weights, computed now (differentiable).
  std::vector<Tensor> losses() const;
  int64_t count_params() const;

 protected:
  virtual void build(const Shape& /*input_shape*/) {}
  virtual Tensor call(const Tensor& x, bool training) = 0;
  Variable add_weight(const std::string& name, const Shape& shape, const InitializerRef& initializer,
                      bool trainable = true, regularizers::RegularizerPtr regularizer = nullptr);
  // Checks that a built layer is called with the feature shape it was built for.
  void check_input(const Tensor& x) const;
  // A weight's value in the compute dtype (Keras' autocasting), recorded so its gradient reaches the variable.
  Tensor autocast(const Variable& v) const;

 private:
  std::string class_name_, name_;
  mixed_precision::DTypePolicy dtype_policy_ = mixed_precision::global_policy();
  bool built_ = false;
  Shape built_shape_;
  std::vector<Variable> weights_;
  std::vector<std::pair<Variable, regularizers::RegularizerPtr>> regularized_;
};
using LayerPtr = std::shared_ptr<Layer>;

// Anything a Sequential model accepts: a layer object by value (layers::Dense(10)) or a shared pointer.
struct LayerHandle {
  LayerPtr ptr;
  template <typename L, typename = std::enable_if_t<std::is_base_of_v<Layer, L>>>
  LayerHandle(L layer) : ptr(std::make_shared<L>(std::move(layer))) {}
  template <typename L> LayerHandle(std::shared_ptr<L> layer) : ptr(std::move(layer)) {}
};

namespace layers {

// The model's input: its feature shape (without batch) and dtype. keras.Input(shape) makes one.
class InputLayer : public Layer {
 public:
  explicit InputLayer(Shape shape, DType dtype = DType::float32, std::string name = "");
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Shape shape_;
  DType dtype_;
};

class Reshape : public Layer {
 public:
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
  Conv2dOptions conv_;
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
  explicit MaxPooling2D(int64_t pool_size = 2, Pooling2DOptions options = {})
      : Pooling2D("MaxPooling2D", pool_size, std::move(options)) {}

 protected:
  Tensor call(const Tensor& x, bool training) override;
};
class AveragePooling2D : public Pooling2D {
 public:
  explicit AveragePooling2D(int64_t pool_size = 2, Pooling2DOptions options = {})
      : Pooling2D("AveragePooling2D", pool_size, std::move(options)) {}

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
  explicit Dropout(double rate, DropoutOptions options = {});
  nlohmann::json get_config() const override;
  // The generator's position, for exact resumption.
  Philox& generator() { return rng_; }
  // The positions of every replica's stream, as JSON for checkpoints, and back.
  nlohmann::json rng_state() const;
  void set_rng_state(const nlohmann::json& state);

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double rate_;
  std::optional<uint64_t> seed_;  // for get_config
  Philox rng_;  // the caller's thread and replica 0
  struct ReplicaStreams {
    std::mutex mutex;
    std::map<int64_t, Philox> by_replica;  // the other replicas, by global replica index
  };
  std::shared_ptr<ReplicaStreams> replica_rngs_ = std::make_shared<ReplicaStreams>();
};

struct BatchNormalizationOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  std::string name = "";
};
// Normalises the last axis with batch statistics while training and moving statistics otherwise.
class BatchNormalization : public Layer {
 public:
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
  explicit Activation(std::string activation, std::string name = "");
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string name_of_activation_;
  activations::Activation activation_;
};

// Makes a layer from its {"class_name", "config"} (Sequential.from_config uses it). A layer class or option
// lockstep does not have (Conv2D's dilation_rate, channels_first, a constraint...) is a ValueError naming both.
LayerPtr from_config(const nlohmann::json& config);
// Keras 3's serialised layer: {"module", "class_name", "config", "registered_name"}, with "build_config" when
// `input_shape` (without batch) is given.
nlohmann::json serialize(const Layer& layer, const Shape* input_shape = nullptr);

}  // namespace layers

// keras.Input: the input layer of a model, for features of `shape` (without batch).
inline layers::InputLayer Input(Shape shape, DType dtype = DType::float32) { return layers::InputLayer(std::move(shape), dtype); }

// Forgets the layer-name counters, so the next Conv2D is "conv2d" again (keras.backend.clear_session).
void clear_session();

}  // namespace lockstep::keras
