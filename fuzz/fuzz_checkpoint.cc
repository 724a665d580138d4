// Checkpoint::restore of a file that is not what save() wrote: the safetensors layer, then the checkpoint's
// own metadata (format, save counter, the objects' JSON values, a dataset iterator's position); and the
// "checkpoint" index file CheckpointManager reads, given the same bytes.
#include "fuzz_util.h"
#include "lockstep/tensor/ops.h"
#include "lockstep/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const data::Dataset dataset = data::Dataset::range(0, 100).shuffle(100, 3).batch(4);
  const std::string_view bytes = fuzz::as_text(data, size);
  const std::string path = fuzz::write_scratch("ckpt-1.safetensors", bytes);
  fuzz::expect_accept_or_refuse([&] {
    Variable epoch(scalar(0, DType::int64), {.name = "epoch", .trainable = false});
    Variable w(from_vector<float>({0, 0, 0}, {3}), {.name = "w"});
    data::Iterator it = dataset.make_iterator(0);
    train::Checkpoint ckpt({{"epoch", epoch}, {"w", w}, {"iterator", it}});
    ckpt.restore(path).expect_partial();
    (void)it.next();  // the restored position must be one the pipeline can continue from
  });
  fuzz::write_scratch("checkpoint", bytes);
  fuzz::expect_accept_or_refuse([&] { (void)train::latest_checkpoint(fuzz::scratch_dir().string()); });
  return 0;
}
