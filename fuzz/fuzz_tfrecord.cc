// TFRecordDataset (plain and GZIP) and the tf.train.Example parser over its records: records and parsed features,
// or a DataLossError / InvalidArgumentError.
#include "fuzz_util.h"
#include "lockstep/data/example.h"
#include "lockstep/data/tfrecord.h"
#include "lockstep/tensor/ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  using namespace lockstep::data;
  const std::string path = fuzz::write_scratch("data.tfrecord", fuzz::as_text(data, size));
  const FeatureSpec spec = {{"label", FixedLenFeature{{}, DType::int64, scalar(0, DType::int64)}},
                            {"image", FixedLenFeature{{2, 3}, DType::float32, scalar(0)}},
                            {"name", FixedLenFeature{{}, kString, StringTensor::scalar("")}},
                            {"tags", VarLenFeature{DType::int64}},
                            {"scores", VarLenFeature{DType::float32}},
                            {"words", VarLenFeature{kString}}};
  for (const char* compression : {"", "GZIP"}) {
    fuzz::expect_accept_or_refuse([&] {
      std::vector<std::string> records;
      for (const Element& e : TFRecordDataset({path}, {compression})) {
        records.push_back(e.string().item());
        fuzz::expect_accept_or_refuse([&] { (void)parse_single_example(records.back(), spec); });
      }
      fuzz::expect_accept_or_refuse([&] { (void)parse_example(records, spec); });
    });
  }
  // The bytes as one serialized Example.
  fuzz::expect_accept_or_refuse([&] { (void)parse_single_example(fuzz::as_text(data, size), spec); });
  return 0;
}
