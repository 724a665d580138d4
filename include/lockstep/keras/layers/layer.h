// keras.layers.Layer, the base of every layer: build(input_shape), call(x, training), its weights and
// get_config(); gradients come from the ops they call. Shapes given to layers exclude the batch dimension, as in
// Keras. Also the symbolic tensors (KerasTensor) a functional Model is built from.
#pragma once
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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

  // Its own weights (add_weight's, then track()'s), then its tracked sublayers', each once, in that order. The
  // reference stays valid until the list changes (a sublayer is built or tracked).
  const std::vector<Variable>& weights() const;
  // Nothing when the layer is frozen; else its own trainable weights and its sublayers' trainable ones.
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  // Keras' layer.trainable: a frozen layer's weights are all non-trainable (fit and the optimizer leave them
  // alone), and a frozen BatchNormalization runs in inference mode. Freezing a layer freezes its tracked
  // sublayers. Copies of a layer share the setting, as they share the weights; set it before compile, as Keras asks.
  bool trainable() const { return *trainable_; }
  void set_trainable(bool trainable);
  // Regularization penalties of this layer's weights, computed now (differentiable), the losses its latest call
  // added (add_call_loss), then its sublayers'.
  std::vector<Tensor> losses() const;
  int64_t count_params() const;
  // The random streams call() draws from, in a fixed order: the layer's own (add_random_stream), then its tracked
  // sublayers'. Checkpoints of a model save every replica's position in each, per worker.
  std::vector<distribute::ReplicaRandomPtr> random_streams() const;

  // Keras' attribute tracking, for a layer made of other layers (what a Python subclass's attributes hold, or a
  // C++ layer's members): a tracked sublayer's weights, losses and random streams count as this layer's. Tracking
  // one twice, or this layer itself, does nothing. Copies of the layer share what it tracks.
  void track(LayerPtr sublayer);
  // A weight made elsewhere (a Python subclass's add_weight, a Variable attribute), with its penalty if any.
  void track(const Variable& weight, regularizers::RegularizerPtr regularizer = nullptr);
  std::vector<LayerPtr> sublayers() const;
  // A loss added by the call running now (Keras' add_loss, an activity penalty); each call starts afresh with
  // clear_call_losses().
  void add_call_loss(Tensor loss);
  void clear_call_losses();

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
  struct Tracked;  // what track() and add_call_loss() keep, shared by the layer's copies
  std::shared_ptr<Tracked> tracked_;
  template <typename Visit>
  void each_weight(Visit&& visit) const;
  std::weak_ptr<Layer> graph_copy_;  // the copy a functional graph holds of this object, while it lives
  // A symbolic call's node; list_input when called with a list (merging layers).
  KerasTensor record_call(const std::vector<KerasTensor>& xs, bool list_input, std::optional<bool> training);
};

namespace detail {
// One call of a layer on symbolic tensors: a node of the graph a functional Model runs.
struct Node {
  LayerPtr layer;  // null for a model input
  std::vector<KerasTensor> inputs;
  bool list_input = false;       // called with a list (merging layers)
  std::optional<bool> training;  // fixed by the symbolic call, else the model's
  Shape shape;                   // the output's, without batch
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
  template <typename L>
  LayerHandle(std::shared_ptr<L> layer) : ptr(std::move(layer)) {}
};

// Forgets the layer-name counters, so the next Conv2D is "conv2d" again (keras.backend.clear_session).
void clear_session();

}  // namespace lockstep::keras
