// GradientTape: records differentiable ops on watched tensors and computes gradients by walking the
// record backwards (TF's tf.GradientTape). Tapes are per thread and nest; an inner tape's gradient
// computation is itself recorded by outer tapes, which gives higher-order gradients.
#pragma once
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lockstep/autograd/variable.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep {

struct GradientTapeOptions {
  // A persistent tape allows several gradient() calls; a plain one only one, as in TF.
  bool persistent = false;
  // Watch every trainable Variable read while the tape is recording.
  bool watch_accessed_variables = true;
};

class GradientTape {
 public:
  explicit GradientTape(GradientTapeOptions options = {});
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void watch(const Tensor& t);
  void watch(const Variable& v);
  // Gradients of `target` with respect to each source; an undefined Tensor where the source does not
  // affect the target (TF returns None). `output_gradient` defaults to ones, the shape of target.
  // Runs each source variable's gradient hooks as soon as its gradient is final.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources,
                               const Tensor& output_gradient = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const Tensor& output_gradient = {});
  Tensor gradient(const Tensor& target, const Tensor& source);
  // Forgets everything recorded so far.
  void reset();
  // Leaves this thread's stack of tapes, keeping what was recorded (the end of Python's `with tape:` block, after
  // which gradient() still works); enter() makes it the innermost tape again (a later `with tape:`).
  void exit();
  void enter();

  // Recording is paused for this tape while the returned guard lives (tape.stop_recording() in TF).
  class StopRecording {
   public:
    explicit StopRecording(GradientTape& tape);
    ~StopRecording();

   private:
    GradientTape& tape_;
    bool was_recording_;
  };
  StopRecording stop_recording() { return StopRecording(*this); }

  // For op implementations: backward maps the output's gradient to one gradient per input (undefined
  // for inputs without one). needs[i] is false for inputs no gradient is wanted for, so costly ones
  // (conv2d's input gradient for the images) can be skipped.
  using BackwardFn = std::function<std::vector<Tensor>(const Tensor& dy, const std::vector<bool>& needs)>;
  // True when some active tape on this thread watches one of `inputs`; ops skip building a backward
  // closure otherwise.
  static bool should_record(std::initializer_list<const Tensor*> inputs) {
    return should_record(std::data(inputs), inputs.size());
  }
  static bool should_record(const std::vector<const Tensor*>& inputs) {
    return should_record(inputs.data(), inputs.size());
  }
  // Records output = op(inputs) on every active tape watching any input.
  static void record(std::initializer_list<const Tensor*> inputs, const Tensor& output, BackwardFn backward) {
    record(std::data(inputs), inputs.size(), output, std::move(backward));
  }
  static void record(const std::vector<const Tensor*>& inputs, const Tensor& output, BackwardFn backward) {
    record(inputs.data(), inputs.size(), output, std::move(backward));
  }

 private:
  struct Entry {
    std::vector<int64_t> inputs;
    int64_t output;
    BackwardFn backward;
  };
  static bool should_record(const Tensor* const* inputs, size_t n);
  static void record(const Tensor* const* inputs, size_t n, const Tensor& output, BackwardFn backward);
  // Called by Variable::read(): tapes that watch accessed variables start watching `value`.
  static void on_variable_read(const Tensor& value);
  std::vector<Tensor> gradient_impl(const Tensor& target, const std::vector<int64_t>& source_ids,
                                    const std::vector<const Variable*>& variables, const Tensor& output_gradient);

  GradientTapeOptions options_;
  bool recording_ = true;
  bool used_ = false;
  std::vector<Entry> entries_;
  std::unordered_set<int64_t> watched_;  // ids of watched tensors and of everything computed from them
  GradientTape* outer_ = nullptr;        // the tape that was innermost before this one
  friend class Variable;
  friend class NoGradGuard;
};

// While one lives on this thread, GradientTape::gradient lets the op that computes a variable's final gradient write
// it straight into the memory the variable's gradient destination names (Variable::set_gradient_destination: a
// distribution strategy's gradient bucket) instead of a tensor of its own, where that op can (a matrix product
// today). The gradients gradient() returns then alias that memory, which the strategy reduces in place while
// backward goes on: for code that hands them on unread (Keras' train step). Without one, every gradient is the
// tape's own tensor, as TF's are.
class GradientsToDestinations {
 public:
  GradientsToDestinations();
  ~GradientsToDestinations();
  GradientsToDestinations(const GradientsToDestinations&) = delete;
  GradientsToDestinations& operator=(const GradientsToDestinations&) = delete;

 private:
  bool previous_;
};

namespace detail {
// For a backward function: where it may write the gradient of its `input`-th input (a tensor of that input's
// shape and dtype), or an undefined tensor. Defined only inside GradientTape::gradient's call of the backward
// function of a source variable's last consumer, under GradientsToDestinations.
const Tensor& gradient_destination(size_t input);
}  // namespace detail

// No tape records while a NoGradGuard lives on this thread (inference, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace lockstep
