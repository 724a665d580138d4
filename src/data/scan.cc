// scan(): threads a state through the elements, (state, element) -> (new state, output). The state is saved
// as its leaves' bytes (it is usually a few counters or sums), so restoring costs nothing and is exact.
#include <cstring>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

std::string to_hex(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    hex[2 * i] = kDigits[p[i] >> 4];
    hex[2 * i + 1] = kDigits[p[i] & 15];
  }
  return hex;
}

// The bytes of `hex` into out[0, n); throws ValueError when it is not 2 * n lower-case hex digits.
void from_hex(const std::string& hex, void* out, size_t n) {
  auto digit = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  LS_CHECK(hex.size() == 2 * n && hex.find_first_not_of("0123456789abcdef") == std::string::npos, ValueError,
           "restore_state: scan's saved state has ", hex.size(), " hex digits where its shape needs ", 2 * n,
           "; pass the state save_state() returned, unmodified");
  auto* p = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]));
}

// A tensor as {"dtype", "shape", "hex": its bytes in row-major order}; null when undefined.
json tensor_to_json(const Tensor& t) {
  if (!t.defined()) return nullptr;
  Tensor c = t.cpu().contiguous();
  std::string hex = to_hex(c.raw_data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  return {{"dtype", std::string(dtype_name(c.dtype()))}, {"shape", c.shape().dims()}, {"hex", std::move(hex)}};
}

Tensor tensor_from_json(const json& j) {
  if (j.is_null()) return {};
  Tensor t = Tensor::empty(Shape(j.at("shape").get<std::vector<int64_t>>()),
                           dtype_from_name(j.at("dtype").get<std::string>()));
  const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  from_hex(j.at("hex").get_ref<const std::string&>(), t.raw_data(), bytes);
  return t;
}

// Byte strings as hex, since JSON text must be UTF-8.
json strings_to_json(const StringTensor& s) {
  json values = json::array();
  for (const std::string& v : s.values) values.push_back(to_hex(v.data(), v.size()));
  return {{"strings", std::move(values)}, {"shape", s.shape.dims()}};
}

StringTensor strings_from_json(const json& j) {
  std::vector<std::string> values;
  for (const json& v : j.at("strings")) {
    const std::string& hex = v.get_ref<const std::string&>();
    std::string bytes(hex.size() / 2, '\0');
    from_hex(hex, bytes.data(), bytes.size());
    values.push_back(std::move(bytes));
  }
  return StringTensor(Shape(j.at("shape").get<std::vector<int64_t>>()), std::move(values));
}

// A nested state: tensors as above, strings as {"strings": [...], "shape"}, containers as {"tuple"|"list": [...]} or
// {"dict": {key: ...}}, None as null.
json element_to_json(const Element& e) {
  switch (e.kind()) {
    case Element::Kind::kNone: return nullptr;
    case Element::Kind::kTensor: return tensor_to_json(e.tensor());
    case Element::Kind::kString: return strings_to_json(e.string());
    case Element::Kind::kDict: {
      json d = json::object();
      for (size_t i = 0; i < e.size(); ++i) d[e.keys()[i]] = element_to_json(e[i]);
      return {{"dict", std::move(d)}};
    }
    default: {
      json items = json::array();
      for (const Element& c : e.children()) items.push_back(element_to_json(c));
      return {{e.kind() == Element::Kind::kList ? "list" : "tuple", std::move(items)}};
    }
  }
}

Element element_from_json(const json& j) {
  if (j.is_null()) return {};
  if (j.contains("hex")) return tensor_from_json(j);
  if (j.contains("strings")) return strings_from_json(j);
  if (j.contains("dict")) {
    std::vector<std::pair<std::string, Element>> items;
    for (const auto& [key, value] : j.at("dict").items()) items.emplace_back(key, element_from_json(value));
    return Element::dict(std::move(items));
  }
  std::vector<Element> items;
  const bool list = j.contains("list");
  for (const json& c : j.at(list ? "list" : "tuple")) items.push_back(element_from_json(c));
  return list ? Element::list(std::move(items)) : Element::tuple(std::move(items));
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
    return {{"element", element_to_json(state_)}, {"input", input_->save_state()}};
  }
  void restore_state(const json& state) override {
    if (state.contains("element")) {
      state_ = element_from_json(state.at("element"));
    } else {  // saved before nested elements: the (x, y, sample_weight) slots
      const json& saved = state.at("state");
      LS_CHECK(saved.is_array() && saved.size() == 3, ValueError,
               "restore_state: scan's saved state is not a list of 3 components; pass the state save_state() returned");
      state_ = Element{tensor_from_json(saved[0]), tensor_from_json(saved[1]), tensor_from_json(saved[2])};
    }
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
