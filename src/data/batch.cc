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

// One component of a batch of values: checks that every element agrees on it, then stacks it.
Tensor stack_component(const std::vector<Element>& elements, Tensor Element::*component, const char* name,
                       const char* op) {
  const Tensor& first = elements[0].*component;
  for (size_t i = 1; i < elements.size(); ++i) {
    const Tensor& t = elements[i].*component;
    LS_CHECK(t.defined() == first.defined(), InvalidArgumentError, op, ": element ", i, " of a batch ",
             t.defined() ? "has" : "lacks", " component ", name, " but element 0 ", first.defined() ? "has" : "lacks",
             " it; make map() return the same components for every element");
    if (!first.defined()) continue;
    LS_CHECK(t.shape() == first.shape() && t.dtype() == first.dtype(), InvalidArgumentError, op, ": element ", i,
             " of a batch has ", name, " of ", dtype_name(t.dtype()), " ", t.shape().str(), " but element 0 has ",
             dtype_name(first.dtype()), " ", first.shape().str(),
             "; elements of one batch must match: map them to one shape and dtype first");
  }
  if (!first.defined()) return {};
  std::vector<int64_t> dims = first.shape().dims();
  dims.insert(dims.begin(), static_cast<int64_t>(elements.size()));
  Tensor out = Tensor::empty(Shape(std::move(dims)), first.dtype());
  const size_t bytes = static_cast<size_t>(first.numel()) * dtype_size(first.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  for (const Element& e : elements) {
    std::memcpy(dst, (e.*component).contiguous().raw_data(), bytes);
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
  return Element{stack_component(elements, &Element::x, "x", op), stack_component(elements, &Element::y, "y", op),
                 stack_component(elements, &Element::sample_weight, "sample_weight", op)};
}

NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder);
}

}  // namespace lockstep::data::detail
