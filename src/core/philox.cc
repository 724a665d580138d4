// Philox4x32-10 and the distributions drawn from it.
#include "lockstep/core/philox.h"

#include <cmath>
#include <numbers>

namespace lockstep {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace

std::array<uint32_t, 4> Philox::block(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t c[4] = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(stream),
                   static_cast<uint32_t>(stream >> 32)};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    uint32_t n[4] = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    c[0] = n[0], c[1] = n[1], c[2] = n[2], c[3] = n[3];
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {c[0], c[1], c[2], c[3]};
}

uint32_t Philox::next_u32() {
  uint64_t p = state_.position++;
  return block(state_.seed, state_.stream, p / 4)[p % 4];
}

float Philox::uniform_float() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

double Philox::uniform_double() {
  uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 27 + 26 = 53 bits
  return static_cast<double>((hi << 26) | lo) * 0x1.0p-53;
}

double Philox::normal() {
  // Box-Muller on (0, 1] x [0, 1); the second value of the pair is dropped so that every draw uses
  // exactly two outputs and positions stay easy to reason about.
  double u1 = 1.0 - uniform_double(), u2 = uniform_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void Philox::fill_uniform(float* out, int64_t n, float low, float high) {
  for (int64_t i = 0; i < n; ++i) out[i] = low + (high - low) * uniform_float();
}
void Philox::fill_uniform(double* out, int64_t n, double low, double high) {
  for (int64_t i = 0; i < n; ++i) out[i] = low + (high - low) * uniform_double();
}
void Philox::fill_normal(float* out, int64_t n, float mean, float stddev) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(mean + stddev * normal());
}
void Philox::fill_normal(double* out, int64_t n, double mean, double stddev) {
  for (int64_t i = 0; i < n; ++i) out[i] = mean + stddev * normal();
}
void Philox::fill_truncated_normal(float* out, int64_t n, float mean, float stddev) {
  for (int64_t i = 0; i < n; ++i) {
    double z;
    do z = normal();
    while (std::abs(z) > 2.0);
    out[i] = static_cast<float>(mean + stddev * z);
  }
}
void Philox::fill_truncated_normal(double* out, int64_t n, double mean, double stddev) {
  for (int64_t i = 0; i < n; ++i) {
    double z;
    do z = normal();
    while (std::abs(z) > 2.0);
    out[i] = mean + stddev * z;
  }
}

}  // namespace lockstep
