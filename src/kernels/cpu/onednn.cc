// The oneDNN plumbing shared by every CPU kernel: one engine and stream, the plan cache and the count of
// primitives created.
#include <algorithm>
#include <atomic>
#include <string>

#include "lockstep/core/error.h"
#include "lockstep/kernels/cpu/kernels.h"
#include "onednn-impl.h"

namespace lockstep::kernels::cpu {
namespace {

std::atomic<int64_t> primitive_count{0};

// CPU streams execute synchronously in the calling thread and hold no per-call state, so threads share one.
dnnl::stream& stream() {
  static dnnl::stream s(onednn::engine());
  return s;
}

}  // namespace

int64_t primitives_created() { return primitive_count.load(); }

namespace onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory Plan::slot(int i, const dnnl::memory::desc& md) {
  if (static_cast<int>(slots_.size()) <= i) slots_.resize(i + 1);
  slots_[i] = dnnl::memory(md, engine(), DNNL_MEMORY_NONE);
  return slots_[i];
}

dnnl::memory Plan::input(const dnnl::memory& user, const dnnl::memory::desc& want) {
  if (user.get_desc() == want) return user;
  dnnl::memory owned(want, engine());
  before_.push_back(make_step(dnnl::reorder(user, owned), {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, owned}}));
  return owned;
}

dnnl::memory Plan::output(const dnnl::memory& user, const dnnl::memory::desc& want) {
  if (user.get_desc() == want) return user;
  dnnl::memory owned(want, engine());
  after_.push_back(make_step(dnnl::reorder(owned, user), {{DNNL_ARG_FROM, owned}, {DNNL_ARG_TO, user}}));
  return owned;
}

void Plan::set_main(const dnnl::primitive_desc& pd, const std::unordered_map<int, dnnl::memory>& args) {
  main_ = make_step(dnnl::primitive(pd), args);
}

Plan::Step Plan::make_step(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args) {
  Step step{primitive, {}, {}};
  ++primitive_count;
  for (const auto& [id, memory] : args) {
    step.memories.push_back(memory);
    step.args.push_back({id, memory.get()});
  }
  return step;
}

void Plan::run(std::initializer_list<const void*> ptrs) {
  int i = 0;
  for (const void* p : ptrs) {
    // Pointers for slots this plan lacks (no bias, the workspace of average pooling) are ignored.
    if (i < static_cast<int>(slots_.size()) && slots_[i]) {
      LS_CHECK(p != nullptr, InvalidArgumentError, "kernel argument ", i, " is null; expected a buffer of ",
               slots_[i].get_desc().get_size(), " bytes");
      slots_[i].set_data_handle(const_cast<void*>(p));
    }
    ++i;
  }
  auto execute = [](const Step& step) {
    dnnl::error::wrap_c_api(dnnl_primitive_execute(step.primitive.get(), stream().get(),
                                                   static_cast<int>(step.args.size()), step.args.data()),
                            "could not execute a primitive");
  };
  for (const Step& step : before_) execute(step);
  execute(main_);
  for (const Step& step : after_) execute(step);
  stream().wait();
}

Key make_key(Op op, std::initializer_list<int64_t> params) {
  Key key{};
  key[0] = static_cast<int64_t>(op);
  LS_CHECK(params.size() < key.size(), RuntimeError, "plan key has ", params.size(), " parameters, at most ",
           key.size() - 1, " fit; enlarge onednn::Key");
  std::copy(params.begin(), params.end(), key.begin() + 1);
  return key;
}

size_t KeyHash::operator()(const Key& k) const {
  size_t h = 0;
  for (int64_t v : k) h = h * 1000003 ^ std::hash<int64_t>()(v);
  return h;
}

std::unordered_map<Key, Plan, KeyHash>& plan_cache() {
  thread_local std::unordered_map<Key, Plan, KeyHash> cache;
  return cache;
}

void throw_build_error(const Key& key, const dnnl::error& e) {
  // In the order of Op.
  static const char* const kOpNames[] = {"?",
                                         "conv2d_forward",
                                         "conv2d_backward_data",
                                         "conv2d_backward_weights",
                                         "pool2d_forward",
                                         "pool2d_backward",
                                         "matmul",
                                         "softmax_forward",
                                         "softmax_backward",
                                         "eltwise_forward"};
  std::string params;
  for (size_t i = 1; i < key.size(); ++i) {
    if (i > 1) params += ',';
    params += std::to_string(key[i]);
  }
  throw InvalidArgumentError(make_message("oneDNN cannot build ", kOpNames[key[0]], " for parameters (", params,
                                          "): ", e.what(), "; check the shapes passed to the kernel"));
}

}  // namespace onednn
}  // namespace lockstep::kernels::cpu
