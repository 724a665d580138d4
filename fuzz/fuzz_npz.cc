// The .npz reader (a zip of .npy members, through libzip) and the .npy parser on the bare bytes: arrays or a
// DataLossError.
#include <span>

#include "fuzz_util.h"
#include "lockstep/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_scratch("data.npz", fuzz::as_text(data, size));
  fuzz::expect_accept_or_refuse([&] { (void)data::read_npz(path); });
  fuzz::expect_accept_or_refuse([&] { (void)data::parse_npy(std::span<const uint8_t>(data, size), "fuzz.npy"); });
  return 0;
}
