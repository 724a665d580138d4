// interleave (and flat_map, its cycle of one): the elements of a dataset made from each input element, taken in
// turns from a cycle of open datasets.
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

using DatasetFn = std::function<Dataset(const Element&)>;

class InterleaveNode final : public UnaryNode {
 public:
  InterleaveNode(NodePtr input, DatasetFn fn, int64_t cycle_length, int64_t block_length)
      : UnaryNode("interleave", {{"cycle_length", cycle_length}, {"block_length", block_length}}, std::move(input)),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "interleave takes one input dataset, got ", inputs.size());
    return std::make_shared<InterleaveNode>(std::move(inputs[0]), fn_, cycle_length_, block_length_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  DatasetFn fn_;
  int64_t cycle_length_, block_length_;
};

// TF's order (the sequential InterleaveDataset): a cycle of open datasets, block_length elements from each in turn; an
// ended one is replaced, at its place in the cycle, by the dataset of the next input element. The state is the
// number of elements given, replayed on restore (the datasets that are open are not saved), and the salt of the
// input and the datasets (a state without it, saved before it was added, keeps this iterator's).
class InterleaveIterator final : public ItemIterator {
 public:
  InterleaveIterator(const InterleaveNode& node, uint64_t salt)
      : node_(node),
        salt_(salt),
        input_(node.input().make_iterator(salt)),
        cycle_(static_cast<size_t>(node.cycle_length_)) {}
  std::optional<Item> next() override {
    while (!end_of_input_ || open_ > 0) {
      std::optional<Iterator>& current = cycle_[index_];
      if (current) {
        if (std::optional<Element> e = current->next()) {
          check_(*e, "interleave");
          if (++block_ == node_.block_length_) advance();
          ++count_;
          return Item{-1, std::move(*e)};
        }
        current.reset();
        --open_;
        advance();
      } else if (!end_of_input_) {
        std::optional<Item> item = input_->next();
        if (!item) {
          end_of_input_ = true;
          continue;
        }
        current = node_.fn_(materialize(*item, node_.input().row_source())).make_iterator(salt_);
        ++open_;
      } else {
        advance();
      }
    }
    return std::nullopt;
  }
  json save_state() const override { return {{"count", count_}, {"salt", salt_}}; }
  void restore_state(const json& state) override {
    const int64_t count = state.at("count").get<int64_t>();
    salt_ = state.value("salt", salt_);
    input_ = node_.input().make_iterator(salt_);
    for (auto& it : cycle_) it.reset();
    index_ = 0, block_ = 0, open_ = 0, count_ = 0, end_of_input_ = false;
    check_.reset();
    for (int64_t i = 0; i < count; ++i)
      LS_CHECK(next().has_value(), ValueError, "restore_state: interleave ended after ", i, " of the ", count,
               " elements it had given; its function and input must be deterministic");
  }

 private:
  void advance() {
    block_ = 0;
    index_ = (index_ + 1) % cycle_.size();
  }
  const InterleaveNode& node_;
  uint64_t salt_;
  std::unique_ptr<ItemIterator> input_;
  std::vector<std::optional<Iterator>> cycle_;
  size_t index_ = 0;
  int64_t block_ = 0, open_ = 0, count_ = 0;
  bool end_of_input_ = false;
  StructureCheck check_;
};
std::unique_ptr<ItemIterator> InterleaveNode::make_iterator(uint64_t salt) const {
  return std::make_unique<InterleaveIterator>(*this, salt);
}

}  // namespace

NodePtr make_interleave_node(NodePtr input, DatasetFn fn, int64_t cycle_length, int64_t block_length) {
  return std::make_shared<InterleaveNode>(std::move(input), std::move(fn), cycle_length, block_length);
}

}  // namespace lockstep::data::detail
