// Variable handles: shared state, in-place updates, watching by tapes, gradient hooks.
#include "lockstep/autograd/variable.h"

#include <atomic>
#include <map>
#include <mutex>

#include "lockstep/autograd/tape.h"
#include "lockstep/tensor/ops.h"

namespace lockstep {

namespace {
std::atomic<int64_t> g_next_variable_id{1};
thread_local VariableCreationScope* t_creation_scope = nullptr;
}  // namespace

VariableCreationScope::VariableCreationScope(std::function<void(const Variable&)> observer)
    : observer_(std::move(observer)), previous_(t_creation_scope) {
  t_creation_scope = this;
}
VariableCreationScope::~VariableCreationScope() { t_creation_scope = previous_; }

struct Variable::Impl {
  std::string name;
  bool trainable;
  int64_t id;
  Tensor value;
  std::mutex hooks_mutex;  // guards hooks and destination
  std::map<int, GradientHook> hooks;
  GradientDestination destination;
  int next_hook = 0;
};

Variable::Variable(const Tensor& initial_value, VariableOptions options) : impl_(std::make_shared<Impl>()) {
  impl_->name = std::move(options.name);
  impl_->trainable = options.trainable;
  impl_->id = g_next_variable_id++;
  // A variable owns its storage (updates never alias the initialiser), on the device of the scope it is made in
  // (TF places variables by tf.device and the strategy's scope).
  const Device device = default_device();
  impl_->value = initial_value.device() == device ? initial_value.clone() : initial_value.to(device);
  if (t_creation_scope) t_creation_scope->observer_(*this);
}

namespace {
const char* kEmpty = "use of an empty Variable handle: construct it with an initial value first";
}

const std::string& Variable::name() const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  return impl_->name;
}
bool Variable::trainable() const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  return impl_->trainable;
}
int64_t Variable::unique_id() const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  return impl_->id;
}
const Tensor& Variable::value() const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  return impl_->value;
}

Tensor Variable::read() const {
  const Tensor& v = value();
  if (impl_->trainable) GradientTape::on_variable_read(v);
  return v;
}

void Variable::assign(const Tensor& value) const {
  LS_CHECK(value.shape() == shape() && value.dtype() == dtype(), InvalidArgumentError, "cannot assign a ",
           dtype_name(value.dtype()), " tensor of shape ", value.shape().str(), " to variable '", name(), "' of ",
           dtype_name(dtype()), " and shape ", shape().str());
  impl_->value.copy_from(value);
}

void Variable::rebind(const Tensor& value) const {
  LS_CHECK(value.shape() == shape() && value.dtype() == dtype() && value.device() == this->value().device(),
           InvalidArgumentError, "cannot rebind variable '", name(), "' of ", dtype_name(dtype()), " and shape ",
           shape().str(), " to a ", dtype_name(value.dtype()), " tensor of shape ", value.shape().str(), " on ",
           value.device().str());
  impl_->value = value;
}

void Variable::assign_add(const Tensor& delta) const {
  assign(raw_ops::binary(raw_ops::BinaryOp::add, value(), delta));
}

void Variable::assign_sub(const Tensor& delta) const {
  assign(raw_ops::binary(raw_ops::BinaryOp::sub, value(), delta));
}

void Variable::set_gradient_destination(GradientDestination destination) const {
  std::lock_guard lock(impl_->hooks_mutex);
  impl_->destination = std::move(destination);
}

Tensor Variable::gradient_destination() const {
  GradientDestination destination;
  {
    std::lock_guard lock(impl_->hooks_mutex);
    destination = impl_->destination;
  }
  return destination ? destination(*this) : Tensor();
}

int Variable::add_gradient_hook(GradientHook hook) const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  std::lock_guard lock(impl_->hooks_mutex);
  int handle = impl_->next_hook++;
  impl_->hooks.emplace(handle, std::move(hook));
  return handle;
}

void Variable::remove_gradient_hook(int handle) const {
  LS_CHECK(impl_, RuntimeError, kEmpty);
  std::lock_guard lock(impl_->hooks_mutex);
  impl_->hooks.erase(handle);
}

void Variable::run_gradient_hooks(const Tensor& gradient) const {
  std::map<int, GradientHook> hooks;
  {
    std::lock_guard lock(impl_->hooks_mutex);
    hooks = impl_->hooks;
  }
  for (auto& [handle, hook] : hooks) hook(*this, gradient);
}

}  // namespace lockstep
