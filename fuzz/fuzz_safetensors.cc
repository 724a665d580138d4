// The safetensors reader, in memory (parse_safetensors: checkpoints restored from broadcast bytes, saved
// models) and from a file (load_safetensors: load_weights): a checked file or a DataLossError.
#include "fuzz_util.h"
#include "lockstep/train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string_view bytes = fuzz::as_text(data, size);
  fuzz::expect_accept_or_refuse([&] {
    const train::SafetensorsFile file = train::parse_safetensors(bytes, "fuzz.safetensors");
    for (const train::NamedTensor& t : file.tensors) (void)t.tensor.numel();
  });
  const std::string path = fuzz::write_scratch("weights.safetensors", bytes);
  fuzz::expect_accept_or_refuse([&] { (void)train::load_safetensors(path); });
  return 0;
}
