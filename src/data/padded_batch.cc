// padded_batch(): batch() for elements whose shapes differ. Each leaf of a batch is padded (see Padding in
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
        padding_(std::move(padding)) {}
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
  std::vector<Padding> padding_;  // one per leaf, in Element::flatten() order
};

const std::vector<int64_t>& dims_of(const Element& leaf) {
  return leaf.is_tensor() ? leaf.tensor().shape().dims() : leaf.string().shape.dims();
}

// The shape each element of the batch is padded to (leaves[i]: this leaf of element i), checking what must match.
std::vector<int64_t> padded_dims(const std::vector<Element>& leaves, const Padding& p) {
  const std::vector<int64_t>& first = dims_of(leaves[0]);
  const int64_t rank = static_cast<int64_t>(first.size());
  for (size_t i = 0; i < leaves.size(); ++i)
    LS_CHECK(static_cast<int64_t>(dims_of(leaves[i]).size()) == rank, InvalidArgumentError, "padded_batch: element ", i,
             " of a batch has a component of ", leaves[i].str(), " but element 0 has ", leaves[0].str(),
             "; elements of one batch must have one dtype and rank: map them to one first");
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t a = 0; a < rank; ++a) {
    const auto ua = static_cast<size_t>(a);
    int64_t widest = 0;
    bool equal = true;
    for (const Element& l : leaves) {
      widest = std::max(widest, dims_of(l)[ua]);
      equal = equal && dims_of(l)[ua] == first[ua];
    }
    const bool padded = p.axes == Padding::Axes::kAll || (p.axes == Padding::Axes::kLast && a + 1 == rank);
    LS_CHECK(padded || equal, InvalidArgumentError, "batch: the elements of a batch have components of shapes ",
             leaves[0].str(), " and others differing along axis ", a,
             "; elements of one batch must match: map them to one shape first, or use padded_batch");
    const int64_t fixed = p.axes == Padding::Axes::kAll && ua < p.padded_shape.size() ? p.padded_shape[ua] : -1;
    LS_CHECK(fixed < 0 || widest <= fixed, InvalidArgumentError, "padded_batch: a component has ", widest,
             " entries along axis ", a, " but padded_shapes gives ", fixed, "; pass a larger padded shape (or None)");
    dims[ua] = fixed >= 0 ? fixed : widest;
  }
  return dims;
}

// Where each row (along the last axis) of an array of shape `from` starts inside one of shape `to` (row-major,
// counted in entries); a scalar is one row at 0.
std::vector<int64_t> row_offsets(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  const size_t rank = from.size();
  if (rank == 0) return {0};
  int64_t rows = 1;
  for (size_t a = 0; a + 1 < rank; ++a) rows *= from[a];
  if (from.back() == 0) rows = 0;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(rows));
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (size_t a = 0; a + 1 < rank; ++a) at = at * to[a] + idx[a];
    out.push_back(at * to.back());
    for (size_t a = rank - 1; a-- > 0;) {
      if (++idx[a] < from[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

// One leaf of a batch: the elements' leaves, each padded to padded_dims, stacked along a new axis 0.
Element pad_stack(const std::vector<Element>& leaves, const Padding& p) {
  const Element& first = leaves[0];
  if (first.is_none()) return first;
  std::vector<int64_t> dims = padded_dims(leaves, p);
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin(), static_cast<int64_t>(leaves.size()));
  const int64_t per_element = Shape(dims).numel();
  if (first.is_string()) {  // TF pads strings with b""
    std::vector<std::string> values(static_cast<size_t>(per_element) * leaves.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
      const StringTensor& t = leaves[i].string();
      const int64_t row = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
      const std::vector<int64_t> offsets = row_offsets(t.shape.dims(), dims);
      for (size_t r = 0; r < offsets.size(); ++r)
        for (int64_t k = 0; k < row; ++k)
          values[static_cast<size_t>(static_cast<int64_t>(i) * per_element + offsets[r] + k)] =
              t.values[r * static_cast<size_t>(row) + static_cast<size_t>(k)];
    }
    return StringTensor(Shape(std::move(out_dims)), std::move(values));
  }
  const DType dtype = first.tensor().dtype();
  Tensor out = Tensor::empty(Shape(out_dims), dtype);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    auto* data = static_cast<T*>(out.raw_data());
    T fill;
    if constexpr (std::is_same_v<T, bfloat16>)
      fill = T(static_cast<float>(p.padding_value));
    else
      fill = static_cast<T>(p.padding_value);
    std::fill(data, data + out.numel(), fill);
  });
  const size_t item = dtype_size(dtype);
  auto* base = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < leaves.size(); ++i) {
    Tensor t = leaves[i].tensor().contiguous();
    LS_CHECK(t.dtype() == dtype, InvalidArgumentError, "padded_batch: element ", i, " of a batch has a component of ",
             leaves[i].str(), " but element 0 has ", first.str(), "; map them to one dtype first");
    const auto* src = static_cast<const char*>(t.raw_data());
    char* dst = base + static_cast<size_t>(static_cast<int64_t>(i) * per_element) * item;
    const size_t row_bytes = static_cast<size_t>(t.rank() == 0 ? 1 : t.dim(t.rank() - 1)) * item;
    const std::vector<int64_t> offsets = row_offsets(t.shape().dims(), dims);
    for (size_t r = 0; r < offsets.size(); ++r)
      std::memcpy(dst + static_cast<size_t>(offsets[r]) * item, src + r * row_bytes, row_bytes);
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
    std::vector<std::vector<Element>> leaves;  // [element][leaf]
    for (const Element& e : elements) {
      check_same_structure(elements[0], e, "padded_batch", "the elements of a batch");
      leaves.push_back(e.flatten());
    }
    const size_t n = leaves[0].size();
    LS_CHECK(node_.padding_.size() <= n, InvalidArgumentError, "padded_batch: got ", node_.padding_.size(),
             " paddings, but the elements ", elements[0].str(), " have ", n, " components; pass one per component");
    std::vector<Element> stacked, column(elements.size());
    for (size_t k = 0; k < n; ++k) {
      for (size_t i = 0; i < elements.size(); ++i) column[i] = std::move(leaves[i][k]);
      stacked.push_back(pad_stack(column, k < node_.padding_.size() ? node_.padding_[k] : Padding{}));
    }
    return Item{-1, elements[0].pack_leaves(std::move(stacked))};
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
