// Weights and checkpoints as safetensors files, readable by the `safetensors` Python package: written
// atomically, with a CRC32C of every tensor in __metadata__ that loading checks.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/tensor/tensor.h"

namespace lockstep::train {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Writes `tensors` (CPU tensors of any strides, stored row-major in this order) and `metadata` to `path`.
// The file is written through AtomicFile (core/files.h), so a crash leaves either the old file or the new one. Each tensor's CRC32C is stored in __metadata__ as "crc32c/<name>" (8 hex
// digits). Throws ValueError for duplicate or reserved names, NotFoundError when the directory is missing,
// and Error when the write fails (disk full, no permission).
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;             // in the order of their data in the file
  std::map<std::string, std::string> metadata;  // the caller's metadata; the crc32c/ entries are removed
  // The tensor called `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
};

// Reads and validates a safetensors file, checking the CRC32C of every tensor that has one (files from
// other tools have none and load unchecked). Throws NotFoundError when the file cannot be opened and
// DataLossError, naming the file and the problem, when it is truncated, malformed or corrupted.
SafetensorsFile load_safetensors(const std::string& path);
// The metadata of a safetensors file from its header alone, with the header's layout checked against the file's
// size (a truncated or emptied file fails) but no tensor read, so no CRC32C checked. The errors of load_safetensors.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

// The same two in memory: the bytes save_safetensors would write, and a parse of such bytes with the same
// checks (`name` stands for the file in messages).
std::string serialize_safetensors(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& name);

}  // namespace lockstep::train
