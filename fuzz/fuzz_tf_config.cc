// TF_CONFIG as the TFConfigClusterResolver parses it: any bytes give a validated cluster or a ValueError.
#include "fuzz_util.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::expect_accept_or_refuse([&] {
    distribute::TFConfigClusterResolver resolver{std::string(fuzz::as_text(data, size))};
    // What the strategy reads next from an accepted config.
    (void)resolver.cluster_spec().as_dict().dump();
    (void)resolver.training_tasks();
    (void)resolver.rank();
    (void)resolver.is_chief();
    (void)resolver.task();
    if (resolver.is_configured()) (void)resolver.chief();
  });
  return 0;
}
