// Sequential::load_model on a saved model directory whose config.json is the input (its weights file holds no
// tensors): the JSON, the layer and initializer configs, build_config and compile_config, refused with a
// lockstep::Error when malformed.
#include "fuzz_util.h"
#include "lockstep/keras/model.h"
#include "lockstep/train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const std::string dir = [] {
    const auto d = fuzz::scratch_dir() / "model";
    std::filesystem::create_directories(d);
    fuzz::write_scratch("model/model.weights.safetensors", train::serialize_safetensors({}));
    return d.string();
  }();
  fuzz::write_scratch("model/config.json", fuzz::as_text(data, size));
  fuzz::expect_accept_or_refuse([&] { (void)keras::Sequential::load_model(dir); });
  return 0;
}
