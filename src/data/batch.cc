// batch(): stacks batch_size consecutive elements along a new axis 0. Over lazy rows it asks the source to
// gather them (one memcpy per row into the output); over values it copies each element into its slot.
#include <cstring>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class BatchNode final : public UnaryNode {
 public:
  BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder)
      : UnaryNode("batch", {{"batch_size", batch_size}, {"drop_remainder", drop_remainder}}, std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  int64_t cardinality() const override {
    return batched_cardinality(input().cardinality(), batch_size_, drop_remainder_);
  }
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<BatchNode>(single_input(inputs, op()), batch_size_, drop_remainder_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t batch_size_;
  bool drop_remainder_;
};

// One leaf of a batch of values (leaves[i] of element i): checks that every element agrees on it, then stacks it.
Element stack_leaf(const std::vector<Element>& leaves, const std::vector<Element>& elements, const char* op) {
  const Element& first = leaves[0];
  for (size_t i = 1; i < leaves.size(); ++i) {
    const Element& l = leaves[i];
    const bool same = first.is_tensor() ? l.tensor().shape() == first.tensor().shape()
                      : first.is_string() ? l.string().shape == first.string().shape
                                          : true;
    LS_CHECK(same, InvalidArgumentError, op, ": element ", i, " of a batch is ", elements[i].str(),
             " but element 0 is ", elements[0].str(),
             "; elements of one batch must match: map them to one shape first, or use padded_batch");
  }
  if (first.is_none()) return first;
  if (first.is_string()) {
    std::vector<int64_t> dims = first.string().shape.dims();
    dims.insert(dims.begin(), static_cast<int64_t>(leaves.size()));
    std::vector<std::string> values;
    for (const Element& l : leaves) values.insert(values.end(), l.string().values.begin(), l.string().values.end());
    return StringTensor(Shape(std::move(dims)), std::move(values));
  }
  const Tensor& t0 = first.tensor();
  std::vector<int64_t> dims = t0.shape().dims();
  dims.insert(dims.begin(), static_cast<int64_t>(leaves.size()));
  Tensor out = Tensor::empty(Shape(std::move(dims)), t0.dtype());
  const size_t bytes = static_cast<size_t>(t0.numel()) * dtype_size(t0.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  for (const Element& l : leaves) {
    std::memcpy(dst, l.tensor().contiguous().raw_data(), bytes);
    dst += bytes;
  }
  return out;
}

class BatchIterator final : public UnaryIterator {
 public:
  BatchIterator(const BatchNode& node, uint64_t salt)
      : UnaryIterator(node, salt), node_(node), source_(node.input().row_source()) {}

  std::optional<Item> next() override {
    // Both paths collect up to batch_size items; an input shorter than that is the remainder.
    const size_t want = static_cast<size_t>(node_.batch_size_);
    auto full_enough = [&](size_t n) { return n > 0 && (n == want || !node_.drop_remainder_); };
    if (source_) {
      rows_.clear();
      while (rows_.size() < want) {
        std::optional<Item> item = input_->next();
        if (!item) break;
        rows_.push_back(item->index);
      }
      if (!full_enough(rows_.size())) return std::nullopt;
      ++count_;
      return Item{-1, source_->gather(rows_)};
    }
    std::vector<Element> elements;
    elements.reserve(want);
    while (elements.size() < want) {
      std::optional<Item> item = input_->next();
      if (!item) break;
      elements.push_back(std::move(item->value));
    }
    if (!full_enough(elements.size())) return std::nullopt;
    ++count_;
    return Item{-1, stack_elements(elements, "batch")};
  }

 private:
  const BatchNode& node_;
  const RowSource* source_;
  std::vector<int64_t> rows_;
};

std::unique_ptr<ItemIterator> BatchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<BatchIterator>(*this, salt);
}

}  // namespace

Element stack_elements(const std::vector<Element>& elements, const char* op) {
  std::vector<std::vector<Element>> leaves;  // [element][leaf]
  leaves.reserve(elements.size());
  for (const Element& e : elements) {
    check_same_structure(elements[0], e, op, "the elements of a batch");
    leaves.push_back(e.flatten());
  }
  std::vector<Element> stacked;
  std::vector<Element> column(elements.size());
  for (size_t k = 0; k < leaves[0].size(); ++k) {
    for (size_t i = 0; i < elements.size(); ++i) column[i] = std::move(leaves[i][k]);
    stacked.push_back(stack_leaf(column, elements, op));
  }
  return elements[0].pack_leaves(std::move(stacked));
}

NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder);
}

}  // namespace lockstep::data::detail
