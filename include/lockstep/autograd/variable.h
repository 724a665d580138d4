// Variable: a named, mutable tensor that gradient tapes watch when it is read, with gradient-ready hooks
// (the point where distribution starts all-reducing a gradient while backward goes on).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "lockstep/tensor/tensor.h"

namespace lockstep {

struct VariableOptions {
  std::string name = "Variable";
  bool trainable = true;
};

class Variable {
 public:
  // Called with the variable and its finished gradient, once per GradientTape::gradient() call.
  using GradientHook = std::function<void(const Variable&, const Tensor& gradient)>;

  Variable() = default;  // an empty handle; valid() is false
  explicit Variable(const Tensor& initial_value, VariableOptions options = {});

  bool valid() const { return impl_ != nullptr; }
  const std::string& name() const;
  bool trainable() const;
  // Unique for the life of the process; equal handles share it.
  int64_t unique_id() const;
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }

  // The current value, watched by every active tape that watches accessed variables (TF's reading of a
  // trainable variable inside a GradientTape).
  Tensor read() const;
  operator Tensor() const { return read(); }
  // The current value without watching it.
  const Tensor& value() const;

  // In-place updates; shape and dtype must match the variable's.
  void assign(const Tensor& value) const;
  // From now on the variable's value is `value` itself (same shape, dtype and device), not a copy: for a strategy
  // that keeps it in memory other workers map (Strategy::mirror).
  void rebind(const Tensor& value) const;
  void assign_add(const Tensor& delta) const;
  void assign_sub(const Tensor& delta) const;

  // Where this variable's gradient may be written by the backward pass (see GradientsToDestinations): the memory
  // for the calling thread, or an undefined tensor. One per variable; an empty function removes it.
  using GradientDestination = std::function<Tensor(const Variable&)>;
  void set_gradient_destination(GradientDestination destination) const;
  Tensor gradient_destination() const;

  int add_gradient_hook(GradientHook hook) const;
  void remove_gradient_hook(int handle) const;
  void run_gradient_hooks(const Tensor& gradient) const;

  bool operator==(const Variable& other) const { return impl_ == other.impl_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// While alive, calls `observer` for every Variable constructed on this thread: how a distribution strategy's
// scope() learns the variables created inside it (to mirror them and hook their gradients). Nests.
class VariableCreationScope {
 public:
  explicit VariableCreationScope(std::function<void(const Variable&)> observer);
  ~VariableCreationScope();
  VariableCreationScope(const VariableCreationScope&) = delete;
  VariableCreationScope& operator=(const VariableCreationScope&) = delete;

 private:
  std::function<void(const Variable&)> observer_;
  VariableCreationScope* previous_;
  friend class Variable;
};

}  // namespace lockstep
