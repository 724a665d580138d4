// keras.layers.Layer: naming, weights, building, dtype casting and shape checks shared by every layer.
#include "lockstep/keras/layers/layer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "layers-impl.h"

namespace lockstep::keras {

using detail::without_batch;

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
WeightBudget::~WeightBudget() {
  t_weights_left = outer_;
}
}  // namespace detail

void clear_session() {
  std::lock_guard lock(g_names_mutex);
  g_name_counts.clear();
}

// ---- Layer ----

Layer::Layer(std::string class_name, std::string name)
    : class_name_(std::move(class_name)),
      name_(name.empty() ? detail::unique_name(class_name_) : std::move(name)),
      tracked_(std::make_shared<Tracked>()) {}

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
  LS_CHECK(got.rank() == built_shape_.rank() && got[-1] == built_shape_[-1], ValueError, "Input 0 of layer \"", name_,
           "\" is incompatible with the layer: expected shape=", detail::with_none(built_shape_),
           ", found shape=", x.shape().str());
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
  const nlohmann::json policy = {{"module", "keras"},
                                 {"class_name", "DTypePolicy"},
                                 {"config", {{"name", dtype_policy_.name()}}},
                                 {"registered_name", nullptr}};
  return {{"name", name_}, {"trainable", trainable()}, {"dtype", policy}};
}

// ---- tracking ----

struct Layer::Tracked {
  mutable std::mutex mutex;
  std::vector<LayerPtr> sublayers;
  std::vector<Variable> weights;
  std::vector<std::pair<Variable, regularizers::RegularizerPtr>> regularized;
  std::vector<Tensor> call_losses;
  // weights() of a layer that tracks anything: replaced only when it changes, so replicas that read it while
  // another asks again keep a valid list.
  std::vector<Variable> all;
};

namespace {
// `vs` without its repeats (the same variable reached through two sublayers), in order.
std::vector<Variable> once_each(std::vector<Variable> vs) {
  std::vector<Variable> out;
  for (Variable& v : vs)
    if (std::none_of(out.begin(), out.end(), [&](const Variable& u) { return u.unique_id() == v.unique_id(); }))
      out.push_back(std::move(v));
  return out;
}
}  // namespace

void Layer::track(LayerPtr sublayer) {
  LS_CHECK(sublayer, ValueError, "layer \"", name_, "\": track() needs a layer, got null");
  std::lock_guard lock(tracked_->mutex);
  std::vector<LayerPtr>& subs = tracked_->sublayers;
  // A copy of this layer (its functional-graph handle) shares its state: tracking it would count it twice.
  if (sublayer->tracked_ == tracked_ ||
      std::any_of(subs.begin(), subs.end(), [&](const LayerPtr& l) { return l->tracked_ == sublayer->tracked_; }))
    return;
  subs.push_back(std::move(sublayer));
}

void Layer::track(const Variable& weight, regularizers::RegularizerPtr regularizer) {
  std::lock_guard lock(tracked_->mutex);
  std::vector<Variable>& own = tracked_->weights;
  if (std::any_of(own.begin(), own.end(), [&](const Variable& v) { return v.unique_id() == weight.unique_id(); }))
    return;
  own.push_back(weight);
  if (regularizer) tracked_->regularized.emplace_back(weight, std::move(regularizer));
}

std::vector<LayerPtr> Layer::sublayers() const {
  std::lock_guard lock(tracked_->mutex);
  return tracked_->sublayers;
}

void Layer::add_call_loss(Tensor loss) {
  std::lock_guard lock(tracked_->mutex);
  tracked_->call_losses.push_back(std::move(loss));
}

void Layer::clear_call_losses() {
  std::lock_guard lock(tracked_->mutex);
  tracked_->call_losses.clear();
}

// Calls `visit` with every weight weights() lists, own first, repeats included.
template <typename Visit>
void Layer::each_weight(Visit&& visit) const {
  for (const Variable& v : weights_) visit(v);
  for (const Variable& v : tracked_->weights) visit(v);
  for (const LayerPtr& l : tracked_->sublayers)
    for (const Variable& v : l->weights()) visit(v);
}

const std::vector<Variable>& Layer::weights() const {
  std::lock_guard lock(tracked_->mutex);
  if (tracked_->weights.empty() && tracked_->sublayers.empty()) return weights_;
  // A warm step asks every step: check the cached list in place (no allocation), rebuild it only when it changed.
  const std::vector<Variable>& all = tracked_->all;
  size_t matched = 0;
  bool same = true;
  each_weight([&](const Variable& v) {
    if (!same) return;
    if (matched < all.size() && all[matched].unique_id() == v.unique_id())
      ++matched;
    else
      same = std::any_of(all.begin(), all.begin() + static_cast<ptrdiff_t>(matched),
                         [&](const Variable& u) { return u.unique_id() == v.unique_id(); });  // a repeat
  });
  if (same && matched == all.size()) return all;
  std::vector<Variable> now;
  each_weight([&](const Variable& v) { now.push_back(v); });
  tracked_->all = once_each(std::move(now));
  return tracked_->all;
}

std::vector<Variable> Layer::trainable_weights() const {
  if (!trainable()) return {};
  std::vector<Variable> out;
  for (const Variable& v : weights_)
    if (v.trainable()) out.push_back(v);
  std::lock_guard lock(tracked_->mutex);
  for (const Variable& v : tracked_->weights)
    if (v.trainable()) out.push_back(v);
  for (const LayerPtr& l : tracked_->sublayers) {
    std::vector<Variable> theirs = l->trainable_weights();
    out.insert(out.end(), theirs.begin(), theirs.end());
  }
  return once_each(std::move(out));
}

std::vector<Variable> Layer::non_trainable_weights() const {
  const std::vector<Variable> trainable = trainable_weights();
  std::vector<Variable> out;
  for (const Variable& v : weights())
    if (std::none_of(trainable.begin(), trainable.end(),
                     [&](const Variable& t) { return t.unique_id() == v.unique_id(); }))
      out.push_back(v);
  return out;
}

void Layer::set_trainable(bool trainable) {
  *trainable_ = trainable;
  for (const LayerPtr& l : sublayers()) l->set_trainable(trainable);
}

std::vector<Tensor> Layer::losses() const {
  std::vector<Tensor> out;
  for (const auto& [v, reg] : regularized_) out.push_back((*reg)(v));
  std::lock_guard lock(tracked_->mutex);
  for (const auto& [v, reg] : tracked_->regularized) out.push_back((*reg)(v));
  out.insert(out.end(), tracked_->call_losses.begin(), tracked_->call_losses.end());
  for (const LayerPtr& l : tracked_->sublayers) {
    std::vector<Tensor> theirs = l->losses();
    out.insert(out.end(), theirs.begin(), theirs.end());
  }
  return out;
}

std::vector<distribute::ReplicaRandomPtr> Layer::random_streams() const {
  std::vector<distribute::ReplicaRandomPtr> out = random_streams_;
  for (const LayerPtr& l : sublayers()) {
    std::vector<distribute::ReplicaRandomPtr> theirs = l->random_streams();
    out.insert(out.end(), theirs.begin(), theirs.end());
  }
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

}  // namespace lockstep::keras
