// CRC32C (Castagnoli polynomial), the per-tensor checksum of lockstep checkpoints (as in TFRecord).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lockstep::train {

// CRC32C of n bytes at `data`, continuing from `crc`, the CRC32C of the bytes before them (0 to start):
// crc32c(b, nb, crc32c(a, na)) equals the CRC32C of a followed by b.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace lockstep::train
