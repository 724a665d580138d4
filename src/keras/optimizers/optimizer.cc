// Optimizer base: learning rate, iterations, slots and their saving, and the update's split over replicas, workers
// and threads. Scalars are computed in double, elements in the variable's own type.
#include "lockstep/keras/optimizers/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "lockstep/autograd/tape.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/threads.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/kernels/cuda/runtime.h"
#include "lockstep/tensor/ops.h"
#include "optimizers-impl.h"

namespace lockstep::keras::optimizers {

Optimizer::Optimizer(std::string name, LearningRate learning_rate, std::vector<std::string> slot_names,
                     double slot_initial_value)
    : name_(std::move(name)),
      learning_rate_(std::move(learning_rate)),
      slot_names_(std::move(slot_names)),
      slot_initial_value_(slot_initial_value) {
  LS_CHECK(slot_names_.size() <= kMaxSlots, ValueError, "optimizer ", name_, " asks for ", slot_names_.size(),
           " slots; at most ", kMaxSlots, " are supported");
}

Optimizer::~Optimizer() = default;

Optimizer::Slots& Optimizer::slots_for(const Variable& v) {
  if (auto it = slot_index_.find(v.unique_id()); it != slot_index_.end()) return slots_[it->second];
  // Two variables of one name would save under one key; the later one gets a "_<k>" suffix, which is
  // stable as long as variables are created in the same order.
  std::string base = name_ + "/" + v.name(), prefix = base + "/";
  for (int k = 1; std::any_of(slots_.begin(), slots_.end(), [&](const Slots& s) { return s.prefix == prefix; }); ++k)
    prefix = base + "_" + std::to_string(k) + "/";
  Slots s{prefix, {}};
  // Restored state waiting for this variable: matched by creation order, as TF matches slots through the
  // model's structure, so a model rebuilt in a new process (whose layers may be named differently) restores.
  auto p = pending_.find(slots_.size());
  for (size_t i = 0; i < slot_names_.size(); ++i) {
    Tensor t = full(v.shape(), slot_initial_value_, v.dtype(), v.value().device());  // state lives beside its variable
    if (p != pending_.end() && p->second[i].defined()) {
      LS_CHECK(p->second[i].shape() == t.shape(), ValueError, "optimizer state for slot '", slot_names_[i],
               "' of variable ", slots_.size(), " has shape ", p->second[i].shape().str(), " but variable '", v.name(),
               "' has shape ", t.shape().str(), "; was the checkpoint written for another model?");
      t.copy_from(raw_ops::cast(p->second[i], t.dtype()));
    }
    s.tensors.push_back(t);
  }
  if (p != pending_.end()) pending_.erase(p);
  slot_index_.emplace(v.unique_id(), slots_.size());
  slots_.push_back(std::move(s));
  return slots_.back();
}

void Optimizer::build(const std::vector<Variable>& variables) {
  for (const Variable& v : variables) slots_for(v);
}

template <typename T>
void Optimizer::apply_one(std::span<const Tensor> addends, const Variable& v, const Step& step, int part, int parts,
                          const Copies* copies) {
  const Tensor& value = v.value();
  Tensor g = addends[0].to(value.device()).contiguous();
  const std::vector<Tensor>& slots = slots_for(v).tensors;
  if (value.device().is_gpu()) {
#if LOCKSTEP_WITH_CUDA
    if (part != 0) return;  // one kernel does the whole variable
    kernels::cuda::set_device(value.device().index);
    std::array<T*, kMaxSlots> s{};
    for (size_t i = 0; i < slots.size(); ++i) s[i] = static_cast<T*>(slots[i].device_data());
    Step on_gpu = step;
    on_gpu.on_gpu = true;
    update_step(static_cast<T*>(value.device_data()), static_cast<const T*>(g.device_data()), s.data(), value.numel(),
                on_gpu);
#endif
    return;
  }
  // This part's elements, split at cache lines (16 floats) so that two parts never write one line.
  const int64_t n = value.numel();
  auto boundary = [&](int p) { return p == parts ? n : n * p / parts / 16 * 16; };
  const int64_t begin = boundary(part), end = boundary(part + 1);
  if (begin >= end) return;
  T* w = value.data<T>() + begin;
  const T* gp = g.data<T>() + begin;
  std::array<T*, kMaxSlots> s{};
  for (size_t i = 0; i < slots.size(); ++i) s[i] = slots[i].data<T>() + begin;
  // The shared update: what this worker wrote, into the other workers' copies, while it is still in cache.
  auto publish = [&](int64_t at, int64_t count) {
    if (!copies) return;
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    for (size_t r = 0; r < copies->value.size(); ++r) {
      if (r == copies->self) continue;
      std::memcpy(static_cast<T*>(copies->value[r]) + begin + at, w + at, bytes);
      for (size_t i = 0; i < slots.size(); ++i)
        std::memcpy(static_cast<T*>(copies->slots[i][r]) + begin + at, s[i] + at, bytes);
    }
  };
  auto update = [&](int64_t off, int64_t count) {
    std::array<T*, kMaxSlots> sc{};
    for (size_t i = 0; i < slots.size(); ++i) sc[i] = s[i] + off;
    if (addends.size() == 1) {
      update_step(w + off, gp + off, sc.data(), count, step);
      return publish(off, count);
    }
    // Summed in addend order, as the local all-reduce sums its ranks, so the bits are the same.
    constexpr int64_t kBlock = 2048;
    T sum[kBlock];
    for (int64_t at = 0; at < count; at += kBlock) {
      const int64_t len = std::min(kBlock, count - at);
      std::copy(gp + off + at, gp + off + at + len, sum);
      for (const Tensor& a : addends.subspan(1)) {  // contiguous views of the same dtype: the replicas' buckets
        const T* x = a.data<T>() + begin + off + at;
        for (int64_t i = 0; i < len; ++i) sum[i] = sum[i] + x[i];
      }
      std::array<T*, kMaxSlots> sb{};
      for (size_t i = 0; i < slots.size(); ++i) sb[i] = sc[i] + at;
      update_step(w + off + at, sum, sb.data(), len, step);
      publish(off + at, len);
    }
  };
  // Chunks let large variables use every core; the update is elementwise, so results do not depend on it.
  constexpr int64_t kChunk = 1 << 16;
  const int64_t count = end - begin, chunks = (count + kChunk - 1) / kChunk;
  if (chunks <= 1) return update(0, count);
  parallel_for(chunks, true, [&](int64_t c) { update(c * kChunk, std::min(kChunk, count - c * kChunk)); });
}

void Optimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  LS_CHECK(gradients.size() == variables.size(), InvalidArgumentError, "apply_gradients: got ", gradients.size(),
           " gradients for ", variables.size(), " variables; pass one gradient per variable");
  // Inside strategy.run(): sum the replicas' gradients, then update the mirrored variables once (TF's
  // apply_gradients in replica context), each replica updating a part of every variable from its own copy of the
  // sum.
  distribute::Strategy& strategy = distribute::get_strategy();
  if (distribute::in_replica_context() && strategy.num_replicas_in_sync() > 1) {
    // One worker's replicas, or workers sharing a host: each sums the replicas' gradients as it updates, never
    // writing the sum.
    const bool float32 = std::all_of(variables.begin(), variables.end(),
                                     [](const Variable& v) { return v.dtype() == DType::float32; });
    if (auto each = float32 ? strategy.unreduced_gradients(gradients, variables) : std::nullopt) {
      std::vector<Tensor> first;  // for the checks: every replica's gradients have the same shapes
      for (const auto& addends : *each) first.push_back(addends.front());
      if (strategy.shares_update()) {
        // Workers on one host: each updates its part of every variable, in every worker's copy.
        begin_update(first, variables);
        mirror_state(strategy, variables);
        NoGradGuard no_grad;
        for (size_t i = 0; i < variables.size(); ++i) {
          if (const std::optional<Copies> copies = copies_of(strategy, variables[i]))
            apply_one<float>((*each)[i], variables[i], step_, strategy.worker_rank(), strategy.num_workers(),
                             &*copies);
          else  // not mirrored: every worker updates the whole of its own
            apply_one<float>((*each)[i], variables[i], step_, 0, 1, nullptr);
        }
        strategy.end_shared_update();
        return;
      }
      strategy.merge_call([&] { begin_update(first, variables); },
                          [&](int part, int parts) { update_part(*each, variables, part, parts); });
      return;
    }
    std::vector<Tensor> reduced = strategy.all_reduce_gradients(gradients, variables);
    strategy.merge_call([&] { begin_update(reduced, variables); },
                        [&](int part, int parts) { update_part(reduced, variables, part, parts); });
    return;
  }
  apply_reduced(gradients, variables);
}

void Optimizer::mirror_state(distribute::Strategy& strategy, const std::vector<Variable>& variables) {
  if (mirroring_failed_) return;
  std::vector<Tensor> values;  // stays empty, unallocated, once everything is mirrored
  std::vector<std::function<void(const Tensor&)>> move;
  for (const Variable& v : variables) {
    if (strategy.copies(v.value()).empty()) {
      values.push_back(v.value());
      move.push_back([v](const Tensor& home) { v.rebind(home); });
    }
    const size_t index = slot_index_.at(v.unique_id());
    for (size_t i = 0; i < slots_[index].tensors.size(); ++i) {
      if (!strategy.copies(slots_[index].tensors[i]).empty()) continue;
      values.push_back(slots_[index].tensors[i]);
      move.push_back([this, index, i](const Tensor& home) { slots_[index].tensors[i] = home; });
    }
  }
  if (values.empty()) return;
  const std::vector<Tensor> homes = strategy.mirror(values);
  mirroring_failed_ = homes.empty();  // the same on every worker
  for (size_t i = 0; i < homes.size(); ++i) move[i](homes[i]);
}

std::optional<Optimizer::Copies> Optimizer::copies_of(const distribute::Strategy& strategy, const Variable& v) {
  Copies c{strategy.copies(v.value()), {}, static_cast<size_t>(strategy.worker_rank())};
  if (c.value.empty()) return std::nullopt;
  const std::vector<Tensor>& slots = slots_[slot_index_.at(v.unique_id())].tensors;
  for (size_t i = 0; i < slots.size(); ++i) {
    c.slots[i] = strategy.copies(slots[i]);
    if (c.slots[i].empty()) return std::nullopt;
  }
  return c;
}

void Optimizer::apply_reduced(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  begin_update(gradients, variables);
  update_part(gradients, variables, 0, 1);
}

void Optimizer::begin_update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  step_ = Step{learning_rate(), iterations_ + 1};
  std::string missing;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Tensor& g = gradients[i];
    const Variable& v = variables[i];
    if (!g.defined()) {
      missing += (missing.empty() ? "'" : ", '") + v.name() + "'";
      continue;
    }
    LS_CHECK(g.shape() == v.shape(), InvalidArgumentError, "apply_gradients: gradient for variable '", v.name(),
             "' has shape ", g.shape().str(), ", expected the variable's shape ", v.shape().str());
    LS_CHECK(g.dtype() == v.dtype(), InvalidArgumentError, "apply_gradients: gradient for variable '", v.name(),
             "' is ", dtype_name(g.dtype()), ", expected the variable's dtype ", dtype_name(v.dtype()));
    LS_CHECK(v.dtype() == DType::float32 || v.dtype() == DType::float64, InvalidArgumentError, "optimizer ", name_,
             " cannot update variable '", v.name(), "' of dtype ", dtype_name(v.dtype()),
             "; only float32 and float64 variables are trained");
    LS_CHECK(v.value().is_contiguous(), InvalidArgumentError, "variable '", v.name(), "' is not contiguous");
    slots_for(v);  // created here, on one thread: update_part only looks them up
  }
  if (!missing.empty() && !warned_missing_gradients_) {
    warned_missing_gradients_ = true;
    lockstep::log(
        LogLevel::warning, "Gradients do not exist for variables [", missing,
        "] when minimizing the loss; they are left unchanged. Check that they are used in computing the loss.");
  }
  ++iterations_;
}

void Optimizer::update_part(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables, int part,
                            int parts) {
  NoGradGuard no_grad;  // updates are never part of a gradient computation
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!gradients[i].defined()) continue;
    if (variables[i].dtype() == DType::float32)
      apply_one<float>({&gradients[i], 1}, variables[i], step_, part, parts, nullptr);
    else
      apply_one<double>({&gradients[i], 1}, variables[i], step_, part, parts, nullptr);
  }
}

void Optimizer::update_part(const std::vector<std::vector<Tensor>>& addends, const std::vector<Variable>& variables,
                            int part, int parts) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < variables.size(); ++i) apply_one<float>(addends[i], variables[i], step_, part, parts, nullptr);
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("iterations", from_vector(std::vector<int64_t>{iterations_}, Shape{}));
  for (const Slots& s : slots_)
    for (size_t i = 0; i < slot_names_.size(); ++i) out.emplace_back(s.prefix + slot_names_[i], s.tensors[i].clone());
  return out;
}

void Optimizer::set_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  // Slot sets are matched by position (the order state() wrote them, which is the order the variables were
  // first updated), not by variable name. Everything is checked before anything changes, so a bad
  // checkpoint leaves the optimizer as it was.
  std::vector<std::string> prefixes;                   // saved slot sets in order
  std::map<size_t, std::vector<Tensor>> sets;          // position -> tensor per slot name
  const Tensor* iterations = nullptr;
  for (const auto& [key, t] : state) {
    LS_CHECK(t.defined(), ValueError, "optimizer state '", key, "' is an undefined tensor");
    if (key == "iterations") {
      LS_CHECK(t.numel() == 1, ValueError, "optimizer state 'iterations' must be a scalar, got shape ",
               t.shape().str());
      iterations = &t;
      continue;
    }
    size_t slot = slot_names_.size();
    for (size_t i = 0; i < slot_names_.size(); ++i)
      if (key.size() > slot_names_[i].size() + 1 && key.ends_with("/" + slot_names_[i])) slot = i;
    LS_CHECK(key.starts_with(name_ + "/") && slot < slot_names_.size(), ValueError, "optimizer state '", key,
             "' does not belong to optimizer '", name_, "' (expected 'iterations' or '", name_,
             "/<variable name>/<slot>'); was it saved by another optimizer?");
    const std::string prefix = key.substr(0, key.size() - slot_names_[slot].size());
    size_t at = std::find(prefixes.begin(), prefixes.end(), prefix) - prefixes.begin();
    if (at == prefixes.size()) prefixes.push_back(prefix);
    auto& set = sets[at];
    set.resize(slot_names_.size());
    set[slot] = t;
  }
  for (auto& [at, set] : sets)
    if (at < slots_.size())
      for (size_t i = 0; i < set.size(); ++i)
        LS_CHECK(!set[i].defined() || set[i].shape() == slots_[at].tensors[i].shape(), ValueError, "optimizer state '",
                 prefixes[at], slot_names_[i], "' has shape ", set[i].shape().str(), ", expected ",
                 slots_[at].tensors[i].shape().str(), " (", slots_[at].prefix, slot_names_[i],
                 "); was the checkpoint written for another model?");
  if (iterations) iterations_ = iterations->item<int64_t>();
  for (auto& [at, set] : sets) {
    if (at >= slots_.size()) {
      for (Tensor& t : set)
        if (t.defined()) t = t.clone();
      pending_[at] = std::move(set);
      continue;
    }
    for (size_t i = 0; i < set.size(); ++i)
      if (set[i].defined()) slots_[at].tensors[i].copy_from(raw_ops::cast(set[i], slots_[at].tensors[i].dtype()));
  }
}

nlohmann::json Optimizer::get_config() const {
  // Keras 3's base options, at the values that mean "off" (lockstep has none of them).
  return {{"name", name_},          {"learning_rate", learning_rate_.to_json()}, {"weight_decay", nullptr},
          {"clipnorm", nullptr},    {"global_clipnorm", nullptr},               {"clipvalue", nullptr},
          {"use_ema", false},       {"ema_momentum", 0.99},                     {"ema_overwrite_frequency", nullptr},
          {"loss_scale_factor", nullptr}, {"gradient_accumulation_steps", nullptr}};
}

std::vector<std::vector<std::string>> Optimizer::keras_slot_groups() const {
  if (slot_names_.empty()) return {};
  return {slot_names_};
}

// The arguments get_config() writes above, in Keras' order: lockstep's optimizers have no weight decay (but AdamW),
// clipping, EMA, loss scaling or gradient accumulation yet.
std::vector<Param> detail::with_base(std::vector<Param> own) {
  const char* no = "not implemented by lockstep";
  // AdamW declares weight_decay among its own arguments.
  if (std::none_of(own.begin(), own.end(), [](const Param& p) { return p.name == "weight_decay"; }))
    own.push_back(Param::fixed("weight_decay", nullptr, "not implemented by lockstep but in AdamW"));
  for (Param p : {Param::fixed("clipnorm", nullptr, no),
                  Param::fixed("clipvalue", nullptr, no), Param::fixed("global_clipnorm", nullptr, no),
                  Param::fixed("use_ema", false, no), Param::fixed("ema_momentum", 0.99, no),
                  Param::fixed("ema_overwrite_frequency", nullptr, no), Param::fixed("loss_scale_factor", nullptr, no),
                  Param::fixed("gradient_accumulation_steps", nullptr, no),
                  Param{"name", nullptr, "the optimizer's name; None is its class name"}})
    own.push_back(std::move(p));
  return own;
}

}  // namespace lockstep::keras::optimizers
