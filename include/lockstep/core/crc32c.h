// CRC32C (Castagnoli polynomial): the per-tensor checksum of lockstep checkpoints and the checksum of TFRecord files.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lockstep {

// CRC32C of n bytes at `data`, continuing from `crc`, the CRC32C of the bytes before them (0 to start):
// crc32c(b, nb, crc32c(a, na)) equals the CRC32C of a followed by b.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// TFRecord's masked CRC32C: the CRC rotated right by 15 bits plus a constant, so that the CRC of bytes that hold
// CRCs themselves is not trivially related to them.
inline uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace lockstep
