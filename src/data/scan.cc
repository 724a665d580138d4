// scan(): threads a state through the elements, (state, element) -> (new state, output). The state is saved
// as its tensors' bytes (it is usually a few counters or sums), so restoring costs nothing and is exact.
#include <cstring>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

// A tensor as {"dtype", "shape", "hex": its bytes in row-major order}; null when undefined.
json tensor_to_json(const Tensor& t) {
  if (!t.defined()) return nullptr;
  Tensor c = t.cpu().contiguous();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  const size_t n = static_cast<size_t>(c.numel()) * dtype_size(c.dtype());
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    hex[2 * i] = kDigits[p[i] >> 4];
    hex[2 * i + 1] = kDigits[p[i] & 15];
  }
  return {{"dtype", std::string(dtype_name(c.dtype()))}, {"shape", c.shape().dims()}, {"hex", std::move(hex)}};
}

Tensor tensor_from_json(const json& j) {
  if (j.is_null()) return {};
  Tensor t = Tensor::empty(Shape(j.at("shape").get<std::vector<int64_t>>()),
                           dtype_from_name(j.at("dtype").get<std::string>()));
  const std::string& hex = j.at("hex").get_ref<const std::string&>();
  const size_t n = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  auto digit = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  LS_CHECK(hex.size() == 2 * n && hex.find_first_not_of("0123456789abcdef") == std::string::npos, ValueError,
           "restore_state: scan's saved state tensor has ", hex.size(), " hex digits where its shape needs ", 2 * n,
           "; pass the state save_state() returned, unmodified");
  auto* p = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]));
  return t;
}

class ScanNode final : public UnaryNode {
 public:
  ScanNode(NodePtr input, Element initial_state, ScanFn fn)
      : UnaryNode("scan", json::object(), std::move(input)),
        initial_state_(std::move(initial_state)),
        fn_(std::move(fn)) {}
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<ScanNode>(single_input(inputs, op()), initial_state_, fn_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  Element initial_state_;
  ScanFn fn_;
};

class ScanIterator final : public ItemIterator {
 public:
  ScanIterator(const ScanNode& node, uint64_t salt)
      : node_(node), input_(node.input().make_iterator(salt)), state_(node.initial_state_) {}
  std::optional<Item> next() override {
    std::optional<Item> item = input_->next();
    if (!item) return std::nullopt;
    auto [state, out] = node_.fn_(state_, materialize(*item, node_.input().row_source()));
    state_ = std::move(state);
    return Item{-1, std::move(out)};
  }
  json save_state() const override {
    return {{"state",
             json::array({tensor_to_json(state_.x), tensor_to_json(state_.y), tensor_to_json(state_.sample_weight)})},
            {"input", input_->save_state()}};
  }
  void restore_state(const json& state) override {
    const json& saved = state.at("state");
    LS_CHECK(saved.is_array() && saved.size() == 3, ValueError,
             "restore_state: scan's saved state is not a list of 3 components; pass the state save_state() returned");
    state_ = Element{tensor_from_json(saved[0]), tensor_from_json(saved[1]), tensor_from_json(saved[2])};
    input_->restore_state(state.at("input"));
  }

 private:
  const ScanNode& node_;
  std::unique_ptr<ItemIterator> input_;
  Element state_;
};
std::unique_ptr<ItemIterator> ScanNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ScanIterator>(*this, salt);
}

}  // namespace

NodePtr make_scan_node(NodePtr input, Element initial_state, ScanFn fn) {
  return std::make_shared<ScanNode>(std::move(input), std::move(initial_state), std::move(fn));
}

}  // namespace lockstep::data::detail
