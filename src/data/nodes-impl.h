// Private to src/data: factories of the node classes (one per transformation, each in its own .cc) and
// the few helpers they share.
#pragma once
#include <functional>

#include "lockstep/data/dataset_node.h"

namespace lockstep::data::detail {

NodePtr make_tensor_slices_node(const Element& structure);
NodePtr make_range_node(int64_t start, int64_t stop, int64_t step);
NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration);
NodePtr make_repeat_node(NodePtr input, int64_t count);
NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index);
NodePtr make_map_node(NodePtr input, std::function<Element(const Element&)> fn);
NodePtr make_filter_node(NodePtr input, std::function<bool(const Element&)> predicate);
NodePtr make_take_node(NodePtr input, int64_t count);
NodePtr make_skip_node(NodePtr input, int64_t count);
NodePtr make_cache_node(NodePtr input);
NodePtr make_prefetch_node(NodePtr input, int64_t buffer_size);
NodePtr make_generator_node(std::function<Generator()> make);
NodePtr make_zip_node(std::vector<NodePtr> inputs, ZipFn combine);
NodePtr make_concatenate_node(NodePtr first, NodePtr second);
NodePtr make_sample_node(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed,
                         bool stop_on_empty_dataset);
NodePtr make_interleave_node(NodePtr input, std::function<Dataset(const Element&)> fn, int64_t cycle_length,
                             int64_t block_length);
NodePtr make_padded_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder, std::vector<Padding> padding);
NodePtr make_unbatch_node(NodePtr input);
NodePtr make_window_node(NodePtr input, int64_t size, int64_t shift, int64_t stride, bool drop_remainder);
NodePtr make_scan_node(NodePtr input, Element initial_state, ScanFn fn);

// Base of the stages with one input. By default a stage keeps its input's cardinality and passes lazy
// items through (so its output still indexes the input's RowSource).
class UnaryNode : public DatasetNode {
 public:
  UnaryNode(std::string op, nlohmann::json params, NodePtr input)
      : DatasetNode(std::move(op), std::move(params), {std::move(input)}) {}
  const DatasetNode& input() const { return *inputs()[0]; }
  int64_t cardinality() const override { return input().cardinality(); }
  const RowSource* row_source() const override { return input().row_source(); }
};

// Base of the iterators of one-input stages: the input's iterator and one count (of elements taken,
// skipped, seen...), which together are the stage's state.
class UnaryIterator : public ItemIterator {
 public:
  UnaryIterator(const UnaryNode& node, uint64_t salt) : input_(node.input().make_iterator(salt)) {}
  nlohmann::json save_state() const override { return {{"count", count_}, {"input", input_->save_state()}}; }
  void restore_state(const nlohmann::json& state) override {
    count_ = state.at("count").get<int64_t>();
    LS_CHECK(count_ >= 0, ValueError, "restore_state: the saved element count ", count_,
             " is negative; pass the state save_state() returned");
    input_->restore_state(state.at("input"));
  }

 protected:
  std::unique_ptr<ItemIterator> input_;
  int64_t count_ = 0;
};

// batch()'s and padded_batch()'s cardinality from the input's n (TF's rule: a smaller last batch counts unless
// drop_remainder; unknown and infinite stay so).
inline int64_t batched_cardinality(int64_t n, int64_t batch_size, bool drop_remainder) {
  if (n < 0) return n;
  return n / batch_size + (n % batch_size == 0 || drop_remainder ? 0 : 1);
}

// The only input of a with_inputs() call on a one-input stage.
NodePtr single_input(const std::vector<NodePtr>& inputs, const std::string& op);

// The element an item stands for: the source row for a lazy item, else its value.
inline Element materialize(const Item& item, const RowSource* source) {
  return item.index >= 0 ? source->row(item.index) : item.value;
}

// Elements of one structure and shape stacked along a new axis 0, each leaf checked to agree (batch() over values;
// strings stack by their values); `op` names the stage in errors.
Element stack_elements(const std::vector<Element>& elements, const char* op);

// Row i of a tensor along axis 0, a view.
Tensor row_view(const Tensor& t, int64_t i);

// Remembers the structure of the first element it sees and throws InvalidArgumentError naming both when a later
// one differs (concatenate, interleave, sample_from_datasets: TF checks their inputs' element specs).
class StructureCheck {
 public:
  void operator()(const Element& e, const char* op) {
    if (!first_) {  // its skeleton: holding the element itself would keep its buffers alive
      first_ = e.map([](const Element& leaf) -> Element {
        if (leaf.is_tensor()) return Tensor::empty(Shape({0}), leaf.tensor().dtype());
        return leaf.is_string() ? Element(StringTensor()) : leaf;
      });
      return;
    }
    check_same_structure(*first_, e, op, "the datasets' elements");
  }
  void reset() { first_.reset(); }

 private:
  std::optional<Element> first_;
};

// A distinct salt for sub-iteration k of an iteration salted `salt` (SplitMix64 finaliser).
uint64_t mix_salt(uint64_t salt, uint64_t k);

// Pulls `count` items from `it` (restoring a replayed stage); throws ValueError naming `stage` when the
// input ends first, which means the pipeline is not the one that was saved.
void replay(ItemIterator& it, int64_t count, const std::string& stage, const std::function<void(Item&&)>& on_item);

}  // namespace lockstep::data::detail
