// make_csv_dataset's reader (RFC 4180 records, the header, column inference) over one file: batches, or a
// DataLossError / ValueError naming the problem.
#include "fuzz_util.h"
#include "lockstep/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_scratch("data.csv", fuzz::as_text(data, size));
  data::experimental::CsvOptions options;
  options.num_epochs = 1;
  options.shuffle = false;
  options.num_rows_for_inference = 2;  // later rows are checked while reading, not while inferring
  fuzz::expect_accept_or_refuse([&] {
    for (const data::Element& e : data::experimental::make_csv_dataset(path, 4, options)) (void)e;
  });
  options.label_name = "label";
  fuzz::expect_accept_or_refuse([&] {
    for (const data::Element& e : data::experimental::make_csv_dataset(path, 4, options)) (void)e;
  });
  return 0;
}
