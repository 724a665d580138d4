// Philox4x32-10, a counter-based random generator (Salmon et al., SC'11): output block i is a pure
// function of (seed, stream, i), so every worker given a seed draws the same stream, and a resumed run
// continues it exactly by restoring the position — skip-ahead is an addition.
#pragma once
#include <array>
#include <cstdint>

namespace lockstep {

class Philox {
 public:
  // Everything needed to continue a stream exactly; saved in checkpoints.
  struct State {
    uint64_t seed = 0;
    uint64_t stream = 0;    // independent sub-streams for one seed (per layer, per op)
    uint64_t position = 0;  // 32-bit outputs consumed so far
    bool operator==(const State&) const = default;
  };

  explicit Philox(uint64_t seed = 0, uint64_t stream = 0) : state_{seed, stream, 0} {}
  explicit Philox(State state) : state_(state) {}

  // The four 32-bit outputs of counter block `index`.
  static std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t index);

  uint32_t next_u32();
  // Advances by n 32-bit outputs without computing them.
  void skip(uint64_t n) { state_.position += n; }
  const State& state() const { return state_; }
  void set_state(const State& s) { state_ = s; }

  // Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
  float uniform_float();
  double uniform_double();
  // Standard normal by Box-Muller; uses two uniforms per pair.
  double normal();

  // Bulk fills, drawing in order from the stream.
  void fill_uniform(float* out, int64_t n, float low, float high);
  void fill_uniform(double* out, int64_t n, double low, double high);
  void fill_normal(float* out, int64_t n, float mean, float stddev);
  void fill_normal(double* out, int64_t n, double mean, double stddev);
  // Normal values redrawn while more than two standard deviations from the mean (TF's truncated_normal).
  void fill_truncated_normal(float* out, int64_t n, float mean, float stddev);
  void fill_truncated_normal(double* out, int64_t n, double mean, double stddev);

 private:
  State state_;
};

}  // namespace lockstep
