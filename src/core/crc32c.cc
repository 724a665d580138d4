// CRC32C with the SSE4.2 crc32 instruction, eight bytes at a time, and a byte table for the tail (and for
// builds without SSE4.2).
#include "lockstep/core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace lockstep {

namespace {
constexpr uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed: the CRC is computed LSB first

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) ? kPolynomial : 0u);
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = make_table();
}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;  // the standard pre- and post-inversion, so leading zero bytes change the CRC
#if defined(__SSE4_2__)
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // any alignment
    c64 = _mm_crc32_u64(c64, word);
  }
  c = static_cast<uint32_t>(c64);
#endif
  for (; n > 0; --n, ++p) c = (c >> 8) ^ kTable[(c ^ *p) & 0xFFu];
  return ~c;
}

}  // namespace lockstep
