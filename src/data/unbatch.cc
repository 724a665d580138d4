// unbatch(): the rows of each element along axis 0, as views of the batch's tensors.
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class UnbatchNode final : public UnaryNode {
 public:
  explicit UnbatchNode(NodePtr input) : UnaryNode("unbatch", json::object(), std::move(input)) {}
  int64_t cardinality() const override {
    int64_t n = input().cardinality();
    return n == kInfiniteCardinality ? n : kUnknownCardinality;
  }
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "unbatch takes one input dataset, got ", inputs.size());
    return std::make_shared<UnbatchNode>(std::move(inputs[0]));
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
};

// State: the input's state before the batch being split, and the next row of it; restoring pulls that batch again.
class UnbatchIterator final : public ItemIterator {
 public:
  UnbatchIterator(const UnbatchNode& node, uint64_t salt)
      : node_(node), input_(node.input().make_iterator(salt)), before_(input_->save_state()) {}
  std::optional<Item> next() override {
    while (!batch_ || row_ >= rows_) {
      before_ = input_->save_state();
      if (!pull()) return std::nullopt;
    }
    const int64_t i = row_++;
    return Item{-1, batch_->map([i](const Element& leaf) -> Element {
                  if (leaf.is_tensor()) return row_view(leaf.tensor(), i);
                  if (!leaf.is_string()) return leaf;
                  const StringTensor& s = leaf.string();
                  const auto per_row = static_cast<std::ptrdiff_t>(s.dim(0) ? s.shape.numel() / s.dim(0) : 0);
                  auto begin = s.values.begin() + i * per_row;
                  return StringTensor(Shape(std::vector<int64_t>(s.shape.dims().begin() + 1, s.shape.dims().end())),
                                      std::vector<std::string>(begin, begin + per_row));
                })};
  }
  json save_state() const override { return {{"input", before_}, {"row", row_}}; }
  void restore_state(const json& state) override {
    before_ = state.at("input");
    input_->restore_state(before_);
    batch_.reset();
    const int64_t row = state.at("row").get<int64_t>();
    if (row > 0) {
      LS_CHECK(pull() && row <= rows_, ValueError, "restore_state: unbatch was at row ", row,
               " of a batch its input no longer yields; restore into an iterator of the same pipeline");
      row_ = row;
    }
  }

 private:
  bool pull() {
    std::optional<Item> item = input_->next();
    if (!item) return false;
    batch_ = materialize(*item, node_.input().row_source());
    rows_ = -1;
    for (const Element& leaf : batch_->flatten()) {
      if (leaf.is_none()) continue;
      const int64_t rank = leaf.is_tensor() ? leaf.tensor().rank() : leaf.string().rank();
      LS_CHECK(rank >= 1, InvalidArgumentError, "unbatch: the element ", batch_->str(),
               " has a scalar component, but unbatch splits along axis 0; batch the dataset first");
      const int64_t n = leaf.is_tensor() ? leaf.tensor().dim(0) : leaf.string().dim(0);
      LS_CHECK(rows_ < 0 || n == rows_, InvalidArgumentError, "unbatch: the components of ", batch_->str(),
               " have different lengths along axis 0 (", rows_, " and ", n, "); give them the same batch size");
      rows_ = n;
    }
    LS_CHECK(rows_ >= 0, InvalidArgumentError, "unbatch: the element ", batch_->str(),
             " holds no tensor to split; batch the dataset first");
    row_ = 0;
    return true;
  }
  const UnbatchNode& node_;
  std::unique_ptr<ItemIterator> input_;
  json before_;
  std::optional<Element> batch_;
  int64_t row_ = 0, rows_ = 0;
};
std::unique_ptr<ItemIterator> UnbatchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<UnbatchIterator>(*this, salt);
}

}  // namespace

NodePtr make_unbatch_node(NodePtr input) {
  return std::make_shared<UnbatchNode>(std::move(input));
}

}  // namespace lockstep::data::detail
