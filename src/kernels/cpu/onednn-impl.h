// Private to the oneDNN kernels: the global engine, and Plan, the primitives of one op for one shape, built once
// and kept in a per-thread cache keyed by every shape parameter.
#pragma once
#include <array>
#include <cstdint>
#include <dnnl.hpp>
#include <initializer_list>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lockstep::kernels::cpu::onednn {

using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;

dnnl::engine& engine();

// A plain f32 descriptor in one of our layouts, or format_tag::any to let the primitive choose.
inline dnnl::memory::desc f32_desc(const Dims& dims, Tag tag) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag);
}

// The primitives of one op for one shape: reorders into the layouts the main primitive prefers, the main
// primitive, reorders back into ours. The caller's buffers are "slots", memory objects whose data handle
// run() sets on each call, so a warm call creates no oneDNN object.
class Plan {
 public:
  // A memory object for the i-th pointer passed to run().
  dnnl::memory slot(int i, const dnnl::memory::desc& md);
  // Memory in layout `want` holding `user`'s data: `user` itself when the layouts agree, else a buffer the
  // plan owns, filled from `user` before the main primitive (input) or copied into it after (output).
  dnnl::memory input(const dnnl::memory& user, const dnnl::memory::desc& want);
  dnnl::memory output(const dnnl::memory& user, const dnnl::memory::desc& want);
  void set_main(const dnnl::primitive_desc& pd, const std::unordered_map<int, dnnl::memory>& args);

  // Binds ptrs[i] to slot i and runs every step.
  void run(std::initializer_list<const void*> ptrs);
  size_t slot_bytes(int i) const { return slots_.at(i).get_desc().get_size(); }

 private:
  struct Step {
    dnnl::primitive primitive;
    std::vector<dnnl::memory> memories;  // keeps alive the objects `args` points to
    std::vector<dnnl_exec_arg_t> args;   // prepared once: the C++ execute() would build it on every call
  };
  // Counts a newly created primitive.
  Step make_step(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args);

  std::vector<dnnl::memory> slots_;
  std::vector<Step> before_, after_;
  Step main_;
};

// Identifies a plan: an op id then every parameter that shapes it. Fixed size so a lookup does not allocate.
using Key = std::array<int64_t, 16>;
enum class Op : int64_t {
  conv_fwd = 1,
  conv_bwd_data,
  conv_bwd_weights,
  pool_fwd,
  pool_bwd,
  matmul,
  softmax_fwd,
  softmax_bwd,
  eltwise
};
Key make_key(Op op, std::initializer_list<int64_t> params);

struct KeyHash {
  size_t operator()(const Key& k) const;
};
// This thread's plans. One cache per thread: replicas of the local collective backend run the same shapes at
// once in threads, and a plan's bound memory objects and buffers cannot be shared without making them take
// turns. A second thread's build is cheap: oneDNN's own primitive cache spares it the JIT.
std::unordered_map<Key, Plan, KeyHash>& plan_cache();
// Rethrows oneDNN's refusal to build a plan as a lockstep error naming the op and its parameters.
[[noreturn]] void throw_build_error(const Key& key, const dnnl::error& e);

// The plan for `key`, made by build(plan) on first use in this thread. Plans live until the thread exits.
template <typename Build> Plan& cached_plan(const Key& key, Build&& build) {
  auto& cache = plan_cache();
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Plan plan;
  try {
    build(plan);
  } catch (const dnnl::error& e) {
    throw_build_error(key, e);
  }
  return cache.emplace(key, std::move(plan)).first->second;
}

}  // namespace lockstep::kernels::cpu::onednn
