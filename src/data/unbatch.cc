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

Tensor row_view(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
  std::vector<int64_t> strides(t.strides().begin() + 1, t.strides().end());
  return Tensor(t.storage(), Shape(std::move(dims)), std::move(strides), t.offset() + i * t.strides()[0], t.dtype());
}

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
    const Element& b = *batch_;
    const int64_t i = row_++;
    auto row = [&](const Tensor& t) { return t.defined() ? row_view(t, i) : Tensor(); };
    return Item{-1, Element{row(b.x), row(b.y), row(b.sample_weight)}};
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
    const Element& b = *batch_;
    LS_CHECK(b.x.rank() >= 1, InvalidArgumentError,
             "unbatch: an element is a scalar, but unbatch splits along axis 0; batch the dataset first");
    rows_ = b.x.dim(0);
    for (const Tensor* t : {&b.y, &b.sample_weight})
      LS_CHECK(!t->defined() || (t->rank() >= 1 && t->dim(0) == rows_), InvalidArgumentError,
               "unbatch: the components of an element have different lengths along axis 0 (", b.x.shape().str(),
               " and ", t->shape().str(), "); give them the same batch size");
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
