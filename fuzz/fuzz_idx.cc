// The IDX reader (MNIST's files), raw or gzipped: a uint8 tensor of the header's shape or a DataLossError.
#include "fuzz_util.h"
#include "lockstep/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_scratch("images-idx3-ubyte", fuzz::as_text(data, size));
  fuzz::expect_accept_or_refuse([&] { (void)data::read_idx(path); });
  fuzz::expect_accept_or_refuse([&] { (void)data::read_idx(path, 3); });
  return 0;
}
