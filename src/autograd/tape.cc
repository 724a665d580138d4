// GradientTape: a per-thread stack of tapes, each a list of (inputs, output, backward) entries in the order
// the ops ran, which is already a topological order; gradient() walks it backwards.
#include "lockstep/autograd/tape.h"

#include <span>

#include "lockstep/autograd/ops.h"

namespace lockstep {

namespace {
thread_local GradientTape* t_innermost = nullptr;
thread_local bool t_no_grad = false;
thread_local bool t_to_destinations = false;
// The destinations of the inputs of the backward function running now (GradientTape::gradient sets them).
thread_local const std::vector<Tensor>* t_destinations = nullptr;
}  // namespace

namespace detail {
const Tensor& gradient_destination(size_t input) {
  static const Tensor none;
  return t_destinations && input < t_destinations->size() ? (*t_destinations)[input] : none;
}
}  // namespace detail

GradientTape::GradientTape(GradientTapeOptions options) : options_(options), outer_(t_innermost) {
  t_innermost = this;
}

GradientTape::~GradientTape() { exit(); }

void GradientTape::exit() {
  // Tapes are scoped objects, so they normally end innermost first; unlink from anywhere to be safe.
  for (GradientTape** p = &t_innermost; *p; p = &(*p)->outer_)
    if (*p == this) {
      *p = outer_;
      break;
    }
  outer_ = nullptr;
}

void GradientTape::enter() {
  exit();
  outer_ = t_innermost;
  t_innermost = this;
}

void GradientTape::watch(const Tensor& t) { watched_.insert(t.id()); }
void GradientTape::watch(const Variable& v) { watched_.insert(v.value().id()); }

void GradientTape::reset() {
  entries_.clear();
  watched_.clear();
  used_ = false;
}

void GradientTape::on_variable_read(const Tensor& value) {
  for (GradientTape* t = t_innermost; t; t = t->outer_)
    if (t->recording_ && t->options_.watch_accessed_variables) t->watched_.insert(value.id());
}

bool GradientTape::should_record(const Tensor* const* inputs, size_t n) {
  if (t_no_grad) return false;
  for (GradientTape* t = t_innermost; t; t = t->outer_) {
    if (!t->recording_) continue;
    for (size_t i = 0; i < n; ++i)
      if (inputs[i]->defined() && t->watched_.count(inputs[i]->id())) return true;
  }
  return false;
}

void GradientTape::record(const Tensor* const* inputs, size_t n, const Tensor& output, BackwardFn backward) {
  if (t_no_grad) return;
  std::vector<int64_t> ids;
  for (const Tensor* x : std::span(inputs, n)) {
    ids.push_back(x->defined() ? x->id() : 0);
    if (x->defined() && x->id() == output.id()) return;  // the op returned its input: nothing to differentiate
  }
  for (GradientTape* t = t_innermost; t; t = t->outer_) {
    if (!t->recording_) continue;
    bool watched = false;
    for (int64_t id : ids) watched = watched || t->watched_.count(id);
    if (!watched) continue;
    t->entries_.push_back({ids, output.id(), backward});
    t->watched_.insert(output.id());
  }
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable>& sources,
                                           const Tensor& output_gradient) {
  std::vector<int64_t> ids;
  std::vector<const Variable*> variables;
  for (const Variable& v : sources) {
    ids.push_back(v.value().id());
    variables.push_back(&v);
  }
  return gradient_impl(target, ids, variables, output_gradient);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const Tensor& output_gradient) {
  std::vector<int64_t> ids;
  for (const Tensor& s : sources) ids.push_back(s.id());
  return gradient_impl(target, ids, std::vector<const Variable*>(sources.size(), nullptr), output_gradient);
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source) {
  return gradient(target, std::vector<Tensor>{source})[0];
}

std::vector<Tensor> GradientTape::gradient_impl(const Tensor& target, const std::vector<int64_t>& source_ids,
                                                const std::vector<const Variable*>& variables,
                                                const Tensor& output_gradient) {
  LS_CHECK(!used_ || options_.persistent, RuntimeError,
           "a non-persistent GradientTape can compute only one set of gradients: create it with "
           "GradientTape({.persistent = true}) to call gradient() again");
  used_ = true;
  if (output_gradient.defined())
    LS_CHECK(output_gradient.shape() == target.shape(), InvalidArgumentError, "output_gradient of shape ",
             output_gradient.shape().str(), " does not match the target's shape ", target.shape().str());
  StopRecording pause(*this);

  // Entries on a path to the target, and how many of them consume each tensor.
  std::vector<bool> relevant(entries_.size(), false);
  std::unordered_set<int64_t> needed{target.id()};
  std::unordered_map<int64_t, int> consumers;
  for (size_t i = entries_.size(); i-- > 0;) {
    if (!needed.count(entries_[i].output)) continue;
    relevant[i] = true;
    for (int64_t id : entries_[i].inputs) {
      if (!watched_.count(id)) continue;  // constants need no gradient
      needed.insert(id);
      ++consumers[id];
    }
  }
  std::unordered_map<int64_t, std::vector<size_t>> source_at;
  for (size_t i = 0; i < source_ids.size(); ++i) source_at[source_ids[i]].push_back(i);

  std::unordered_map<int64_t, Tensor> grads;
  grads[target.id()] = output_gradient.defined() ? output_gradient : ones_like(target);
  // A source's gradient is final once every entry consuming it has run: hooks may start on it then.
  auto finished = [&](int64_t id) {
    auto s = source_at.find(id);
    auto g = grads.find(id);
    if (s == source_at.end() || g == grads.end()) return;
    for (size_t i : s->second)
      if (variables[i]) variables[i]->run_gradient_hooks(g->second);
  };
  if (!consumers.count(target.id())) finished(target.id());
  // Under GradientsToDestinations: for each input of entry `e` that is a source variable whose gradient `e`
  // completes alone (its last consumer, nothing accumulated for it yet), the memory the variable names for it.
  // Empty when there is none (most entries: nothing is allocated for them).
  auto destinations_of = [&](const Entry& e, const std::vector<bool>& needs) {
    std::vector<Tensor> found;
    for (size_t j = 0; j < e.inputs.size(); ++j) {
      const int64_t id = e.inputs[j];
      auto s = source_at.find(id);
      if (!needs[j] || s == source_at.end() || consumers[id] != 1 || grads.count(id)) continue;
      for (size_t i : s->second) {
        if (!variables[i]) continue;
        Tensor destination = variables[i]->gradient_destination();
        if (destination.defined()) {
          found.resize(e.inputs.size());
          found[j] = std::move(destination);
        }
        break;
      }
    }
    return found;
  };

  for (size_t i = entries_.size(); i-- > 0;) {
    if (!relevant[i]) continue;
    const Entry& e = entries_[i];
    if (auto g = grads.find(e.output); g != grads.end()) {
      Tensor dy = g->second;
      if (!source_at.count(e.output)) grads.erase(g);  // no longer needed: free it early
      std::vector<bool> needs(e.inputs.size());
      for (size_t j = 0; j < e.inputs.size(); ++j) needs[j] = needed.count(e.inputs[j]) > 0;
      std::vector<Tensor> destinations;
      if (t_to_destinations) destinations = destinations_of(e, needs);
      struct Offered {  // the destinations, for this backward function only
        explicit Offered(const std::vector<Tensor>& d) { t_destinations = d.empty() ? nullptr : &d; }
        ~Offered() { t_destinations = nullptr; }
      } offered(destinations);
      std::vector<Tensor> dx = e.backward(dy, needs);
      for (size_t j = 0; j < e.inputs.size() && j < dx.size(); ++j) {
        if (!dx[j].defined() || !needed.count(e.inputs[j])) continue;
        auto [slot, fresh] = grads.try_emplace(e.inputs[j], dx[j]);
        if (!fresh) slot->second = add(slot->second, dx[j]);
      }
    }
    for (int64_t id : e.inputs)
      if (needed.count(id) && --consumers[id] == 0) finished(id);
  }

  std::vector<Tensor> result;
  for (int64_t id : source_ids) {
    auto g = grads.find(id);
    result.push_back(g == grads.end() ? Tensor() : g->second);
  }
  if (!options_.persistent) {  // a plain tape releases what it held, as TF's does
    entries_.clear();
    watched_.clear();
  }
  return result;
}

GradientTape::StopRecording::StopRecording(GradientTape& tape) : tape_(tape), was_recording_(tape.recording_) {
  tape.recording_ = false;
}
GradientTape::StopRecording::~StopRecording() { tape_.recording_ = was_recording_; }

GradientsToDestinations::GradientsToDestinations() : previous_(t_to_destinations) { t_to_destinations = true; }
GradientsToDestinations::~GradientsToDestinations() { t_to_destinations = previous_; }

NoGradGuard::NoGradGuard() : previous_(t_no_grad) { t_no_grad = true; }
NoGradGuard::~NoGradGuard() { t_no_grad = previous_; }

}  // namespace lockstep
