// from_generator(): a source whose elements come from a function, one call per element. Its state is the
// number of elements taken: restoring makes a new generator and replays that many, so it must be deterministic.
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class GeneratorNode final : public DatasetNode {
 public:
  explicit GeneratorNode(std::function<Generator()> make)
      : DatasetNode("from_generator", json::object(), {}), make_(std::move(make)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "from_generator takes no input dataset, got ", inputs.size());
    return std::make_shared<GeneratorNode>(make_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  std::function<Generator()> make_;
};

// The generator is made on the first next(), not when the iterator is: making one may be costly (a Python
// generator function runs up to its first yield only when asked) and restore_state makes its own.
class GeneratorIterator final : public ItemIterator {
 public:
  explicit GeneratorIterator(const GeneratorNode& node) : node_(node) {}
  std::optional<Item> next() override {
    if (!generator_) start();
    std::optional<Element> e = generator_();
    if (!e) return std::nullopt;
    ++count_;
    return Item{-1, std::move(*e)};
  }
  json save_state() const override { return {{"count", count_}}; }
  void restore_state(const json& state) override {
    const int64_t count = state.at("count").get<int64_t>();
    start();
    count_ = 0;
    for (int64_t i = 0; i < count; ++i)
      LS_CHECK(next().has_value(), ValueError, "restore_state: from_generator ended after ", i, " of the ", count,
               " elements it had given; the generator must yield the same elements on every call");
  }

 private:
  void start() {
    generator_ = node_.make_();
    LS_CHECK(generator_ != nullptr, InvalidArgumentError,
             "from_generator: the factory returned an empty generator; return a function that yields the elements");
  }
  const GeneratorNode& node_;
  Generator generator_;
  int64_t count_ = 0;
};
std::unique_ptr<ItemIterator> GeneratorNode::make_iterator(uint64_t) const {
  return std::make_unique<GeneratorIterator>(*this);
}

}  // namespace

NodePtr make_generator_node(std::function<Generator()> make) {
  return std::make_shared<GeneratorNode>(std::move(make));
}

}  // namespace lockstep::data::detail
