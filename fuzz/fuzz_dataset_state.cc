// Iterator::restore_state with a JSON state that save_state() did not write, into the iterators of three
// pipelines that between them have every stage with state; a restored iterator must then yield elements.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "lockstep/data/dataset.h"
#include "lockstep/tensor/ops.h"

namespace {

using lockstep::data::Dataset;
using lockstep::data::Element;

std::vector<Dataset> pipelines() {
  using namespace lockstep;
  const Tensor x = from_vector<float>(std::vector<float>(60, 1.0f), {20, 3});
  const Tensor y = from_vector<int64_t>(std::vector<int64_t>(20, 1), {20});
  return {
      // The shape of a training pipeline: shuffled batches, repeated without end.
      Dataset::from_tensor_slices(x, y).shuffle(8, 7).batch(4).repeat(),
      Dataset::range(0, 50).repeat(3).shuffle(10, 2).skip(2).take(30).shard(2, 1).cache().prefetch(2),
      Dataset::range(0, 30)
          .map([](const Element& e) { return e; })
          .filter([](const Element& e) { return e.x().item<int64_t>() % 3 != 0; })
          .batch(3, true)
          .repeat(2),
  };
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const std::vector<Dataset> datasets = pipelines();
  fuzz::scratch_dir();  // quiets the log
  const nlohmann::json state = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) return 0;  // the checkpoint's own JSON parse refuses these first
  for (const Dataset& ds : datasets) {
    fuzz::expect_accept_or_refuse([&] {
      data::Iterator it = ds.make_iterator(0);
      it.restore_state(state);
      for (int i = 0; i < 3; ++i) (void)it.next();
      (void)it.save_state().dump();
    });
  }
  return 0;
}
