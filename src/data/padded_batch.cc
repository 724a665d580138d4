// padded_batch(): batch() for elements whose shapes differ. Each component of a batch is padded (see Padding in
// dataset.h) to a common shape, then the elements are stacked along a new axis 0.
#include <algorithm>
#include <cstring>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class PaddedBatchNode final : public UnaryNode {
 public:
  PaddedBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder, std::vector<Padding> padding)
      : UnaryNode("padded_batch", {{"batch_size", batch_size}, {"drop_remainder", drop_remainder}}, std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padding_(std::move(padding)) {
    padding_.resize(3);
  }
  int64_t cardinality() const override {
    return batched_cardinality(input().cardinality(), batch_size_, drop_remainder_);
  }
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "padded_batch takes one input dataset, got ", inputs.size());
    return std::make_shared<PaddedBatchNode>(std::move(inputs[0]), batch_size_, drop_remainder_, padding_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t batch_size_;
  bool drop_remainder_;
  std::vector<Padding> padding_;  // x, y, sample_weight
};

// The shape each element of the batch is padded to, checking what must match.
std::vector<int64_t> padded_dims(const std::vector<Element>& elements, Tensor Element::*slot, const Padding& p) {
  const Tensor& first = elements[0].*slot;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& t = elements[i].*slot;
    LS_CHECK(t.defined() && t.dtype() == first.dtype() && t.rank() == first.rank(), InvalidArgumentError,
             "batch: element ", i, " of a batch has a component of ",
             t.defined() ? make_message(dtype_name(t.dtype()), " ", t.shape().str()) : std::string("None"),
             " but element 0 has ", dtype_name(first.dtype()), " ", first.shape().str(),
             "; elements of one batch must have one dtype and rank: map them to one first");
  }
  std::vector<int64_t> dims(static_cast<size_t>(first.rank()));
  for (int64_t a = 0; a < first.rank(); ++a) {
    int64_t widest = 0;
    bool equal = true;
    for (const Element& e : elements) {
      widest = std::max(widest, (e.*slot).dim(a));
      equal = equal && (e.*slot).dim(a) == first.dim(a);
    }
    const bool padded = p.axes == Padding::Axes::kAll || (p.axes == Padding::Axes::kLast && a + 1 == first.rank());
    LS_CHECK(padded || equal, InvalidArgumentError, "batch: the elements of a batch have components of shapes ",
             first.shape().str(), " and others differing along axis ", a,
             "; elements of one batch must match: map them to one shape first, or use padded_batch");
    const int64_t fixed =
        p.axes == Padding::Axes::kAll && static_cast<size_t>(a) < p.padded_shape.size() ? p.padded_shape[a] : -1;
    LS_CHECK(fixed < 0 || widest <= fixed, InvalidArgumentError, "padded_batch: a component has ", widest,
             " entries along axis ", a, " but padded_shapes gives ", fixed, "; pass a larger padded shape (or None)");
    dims[static_cast<size_t>(a)] = fixed >= 0 ? fixed : widest;
  }
  return dims;
}

// One component of a batch: the elements, each padded to padded_dims, stacked along a new axis 0.
Tensor pad_stack(const std::vector<Element>& elements, Tensor Element::*slot, const Padding& p) {
  const Tensor& first = elements[0].*slot;
  if (!first.defined()) return {};
  std::vector<int64_t> dims = padded_dims(elements, slot, p);
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin(), static_cast<int64_t>(elements.size()));
  Tensor out = Tensor::empty(Shape(out_dims), first.dtype());
  visit_dtype(first.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto* data = static_cast<T*>(out.raw_data());
    T fill;
    if constexpr (std::is_same_v<T, bfloat16>)
      fill = T(static_cast<float>(p.padding_value));
    else
      fill = static_cast<T>(p.padding_value);
    std::fill(data, data + out.numel(), fill);
  });
  const size_t item = dtype_size(first.dtype());
  const int64_t rank = first.rank(), per_element = Shape(dims).numel();
  auto* base = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < elements.size(); ++i) {
    Tensor t = (elements[i].*slot).contiguous();
    const auto* src = static_cast<const char*>(t.raw_data());
    char* dst = base + static_cast<size_t>(static_cast<int64_t>(i) * per_element) * item;
    if (rank == 0) {
      std::memcpy(dst, src, item);
      continue;
    }
    // Row by row along the last axis; idx counts over the other axes of t.
    const int64_t row = t.dim(rank - 1), rows = row == 0 ? 0 : t.numel() / row;
    std::vector<int64_t> idx(static_cast<size_t>(rank - 1), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t at = 0;
      for (int64_t a = 0; a + 1 < rank; ++a) at = at * dims[static_cast<size_t>(a)] + idx[static_cast<size_t>(a)];
      std::memcpy(dst + static_cast<size_t>(at * dims.back()) * item, src + static_cast<size_t>(r * row) * item,
                  static_cast<size_t>(row) * item);
      for (int64_t a = rank - 2; a >= 0; --a) {
        if (++idx[static_cast<size_t>(a)] < t.dim(a)) break;
        idx[static_cast<size_t>(a)] = 0;
      }
    }
  }
  return out;
}

class PaddedBatchIterator final : public UnaryIterator {
 public:
  PaddedBatchIterator(const PaddedBatchNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < node_.batch_size_) {
      std::optional<Item> item = input_->next();
      if (!item) break;
      elements.push_back(materialize(*item, node_.input().row_source()));
    }
    if (elements.empty() || (node_.drop_remainder_ && static_cast<int64_t>(elements.size()) < node_.batch_size_))
      return std::nullopt;
    ++count_;
    const auto& p = node_.padding_;
    return Item{-1, Element{pad_stack(elements, &Element::x, p[0]), pad_stack(elements, &Element::y, p[1]),
                            pad_stack(elements, &Element::sample_weight, p[2])}};
  }

 private:
  const PaddedBatchNode& node_;
};
std::unique_ptr<ItemIterator> PaddedBatchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<PaddedBatchIterator>(*this, salt);
}

}  // namespace

NodePtr make_padded_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder, std::vector<Padding> padding) {
  return std::make_shared<PaddedBatchNode>(std::move(input), batch_size, drop_remainder, std::move(padding));
}

}  // namespace lockstep::data::detail
