// tf.data.TextLineDataset: the lines of text files as string scalars.
#pragma once
#include <string>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data {

struct TextLineOptions {
  std::string compression_type = "";  // "" or "GZIP", as TF spells it
};

// A dataset of the lines of `filenames`, read in order, one file after the other, through a bounded buffer
// (tf.data.TextLineDataset). Each element is a string scalar holding one line without its "\n" (and without the
// "\r" before it), as TF's; a last line without "\n" is a line too, and an empty file gives none. A missing file is
// a NotFoundError; a damaged gzip stream a DataLossError naming the file. Cardinality is unknown, as in TF. The
// iterator's state is (file, line, byte offset), so a restored iterator resumes mid-file; under auto-shard FILE
// (and AUTO, given at least as many files as workers) each worker reads every num_workers-th file.
Dataset TextLineDataset(std::vector<std::string> filenames, TextLineOptions options = {});

}  // namespace lockstep::data
