// CSV input (tf.data.experimental.make_csv_dataset): batches of rows of CSV files (RFC 4180: quoted fields may hold
// the delimiter, doubled quotes and line breaks), read lazily, file after file, shuffled and repeated as TF does.
//
// TF returns (features dict, label) batches; lockstep's Element has one x, so the feature columns (every selected
// column but the label, in the file's column order) are stacked into x, float32 [batch, n_features], and the label
// column becomes y [batch] (int32, int64 or float32, inferred from the first rows as TF infers it; undefined without
// label_name). Text columns cannot be features: leave them out with select_columns.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data::experimental {

struct CsvOptions {
  // Every column of the files, in order; empty: the first line of the first file (then header must be true).
  std::vector<std::string> column_names = {};
  // The value of an empty (or na_value) field, one per column, or one per selected column with select_columns;
  // nullopt makes the field required. Empty: every field defaults to 0, as TF's inferred defaults do.
  std::vector<std::optional<double>> column_defaults = {};
  // The column that becomes y; empty: no label (y undefined).
  std::string label_name = "";
  // The columns to read, by name (their file order counts, not this list's); empty: all.
  std::vector<std::string> select_columns = {};
  char field_delim = ',';
  bool use_quote_delim = true;  // false: quotes are ordinary characters
  std::string na_value = "";    // a field equal to it counts as empty
  bool header = true;           // the first line of every file names the columns and is not data
  int64_t num_epochs = -1;      // -1: repeat forever (TF's None), and every batch is full (drop_remainder)
  bool shuffle = true;
  int64_t shuffle_buffer_size = 10000;
  std::optional<uint64_t> shuffle_seed = {};  // unset: kDefaultShuffleSeed (TF draws a random one)
  int64_t num_rows_for_inference = 100;       // rows of the first files read to infer the label's dtype
  std::string compression_type = "";          // "" or "GZIP"
};

// The rows of the files matching file_pattern (sorted; TF also shuffles their order, lockstep reads them in order),
// shuffled in a buffer of shuffle_buffer_size, repeated num_epochs times and batched by batch_size. Under auto-shard
// AUTO/FILE each worker reads every num_workers-th file. Errors: no matching file is a NotFoundError naming the
// pattern; a label_name or select_columns entry that is not a column is a ValueError listing the columns; a malformed
// row (wrong number of fields, a stray quote, a field that is not a number, a required field left empty) is a
// DataLossError naming the file, line and column.
Dataset make_csv_dataset(const std::string& file_pattern, int64_t batch_size, const CsvOptions& options = {});

}  // namespace lockstep::data::experimental
