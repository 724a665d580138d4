// Readers for the files MNIST-style data sets come in: IDX (LeCun's format, raw or gzipped) and NumPy's
// .npy / .npz (a zip of .npy files, stored or deflated). A corrupt or truncated file raises DataLossError
// naming the file and what is wrong; a missing one NotFoundError.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "lockstep/tensor/tensor.h"

namespace lockstep::data {

// The whole file, or its first max_bytes; a gzip file is decompressed (its CRC checked when read to the
// end), any other file is returned as is.
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes = UINT64_MAX);
// An IDX file of unsigned bytes (type code 0x08): a uint8 tensor with the dimensions of its header.
// expected_rank >= 0 makes a file of another rank a bad magic number (0x0000080<rank>).
Tensor read_idx(const std::string& path, int expected_rank = -1);
// The bytes of a .npy file holding a uint8 array ('|u1' or '<u1', C order); `name` names it in errors.
Tensor parse_npy(std::span<const uint8_t> bytes, const std::string& name);
// Every .npy member of a .npz file (read with libzip, CRCs checked), keyed by its name without ".npy" (np.load's
// keys); other members are skipped.
std::map<std::string, Tensor> read_npz(const std::string& path);

}  // namespace lockstep::data
