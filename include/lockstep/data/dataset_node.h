// The graph behind a Dataset: one node per transformation, each with the method's name, its arguments
// and its input. Users need only dataset.h; the distribution layer reads and rewrites pipelines here.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/data/dataset.h"

namespace lockstep::data {

// An element in flight between stages: either row `index` of the pipeline's RowSource, not yet copied
// out (so shuffle buffers hold indices and batch gathers rows straight into its output), or a value.
struct Item {
  int64_t index = -1;  // >= 0: a row of the source; -1: `value` holds the element
  Element value;
};

// A source whose elements can be read in any order: from_tensor_slices and range.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual int64_t num_rows() const = 0;
  virtual Element row(int64_t i) const = 0;
  // The rows stacked along a new axis 0, contiguous (what batch() returns).
  virtual Element gather(std::span<const int64_t> rows) const = 0;
};

// The iterator interface every stage implements. After the end, next() keeps returning nullopt.
class ItemIterator {
 public:
  virtual ~ItemIterator() = default;
  virtual std::optional<Item> next() = 0;
  virtual nlohmann::json save_state() const = 0;
  // Resets this iterator completely to `state`, whatever it did before.
  virtual void restore_state(const nlohmann::json& state) = 0;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

class DatasetNode {
 public:
  DatasetNode(std::string op, nlohmann::json params, std::vector<NodePtr> inputs);
  virtual ~DatasetNode() = default;

  // The Dataset method that made this node: "from_tensor_slices", "range", "shuffle", "repeat", "batch",
  // "shard", "map", "filter", "take", "skip", "cache", "prefetch", "padded_batch", "unbatch", "window", "scan",
  // "interleave", "zip", "concatenate", "sample_from_datasets", "from_generator"; the file readers "TFRecordDataset",
  // "CsvDataset".
  const std::string& op() const { return op_; }
  // Its arguments by name ({"batch_size": 64, "drop_remainder": false}); functions are not shown and
  // from_tensor_slices shows each component's dtype and shape.
  const nlohmann::json& params() const { return params_; }
  const std::vector<NodePtr>& inputs() const { return inputs_; }
  // "batch(batch_size=64, drop_remainder=false)": names the stage in saved states and errors.
  const std::string& str() const { return str_; }

  virtual int64_t cardinality() const = 0;
  // The same stage over other inputs: how a pipeline is rewritten (e.g. a new batch() below a stage).
  virtual NodePtr with_inputs(std::vector<NodePtr> inputs) const = 0;
  // The source that this node's lazy items index, or null when its items are values.
  virtual const RowSource* row_source() const { return nullptr; }
  // Sources that read files (TFRecordDataset, make_csv_dataset's reader): the files in reading order, and the
  // same source over another list of them, which is how auto-shard FILE gives each worker its own files.
  // Other nodes: no files and null.
  virtual std::vector<std::string> files() const { return {}; }
  virtual NodePtr with_files(std::vector<std::string> /*files*/) const { return nullptr; }
  // A new iterator. `salt` tells iterations apart (the top-level iterator's number, mixed with repeat
  // epochs) so that reshuffling shuffles draw different streams.
  virtual std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const = 0;

  // The number of the next iterator Dataset::make_iterator() makes from this node.
  uint64_t take_iteration_number() const { return iterations_made_++; }

 private:
  std::string op_;
  nlohmann::json params_;
  std::vector<NodePtr> inputs_;
  std::string str_;
  mutable std::atomic<uint64_t> iterations_made_{0};
};

}  // namespace lockstep::data
