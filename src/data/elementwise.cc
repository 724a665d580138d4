// The stages that look at one element at a time: map, filter, take, skip and shard. Filter, take, skip
// and shard pass lazy rows through untouched, so a batch below them still gathers straight from the source.
#include "nodes-impl.h"

namespace lockstep::data::detail {

namespace {

// ---- map ----
class MapNode final : public UnaryNode {
 public:
  MapNode(NodePtr input, std::function<Element(const Element&)> fn)
      : UnaryNode("map", nlohmann::json::object(), std::move(input)), fn_(std::move(fn)) {}
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<MapNode>(single_input(inputs, op()), fn_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  std::function<Element(const Element&)> fn_;
};

class MapIterator final : public UnaryIterator {
 public:
  MapIterator(const MapNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    std::optional<Item> item = input_->next();
    if (!item) return std::nullopt;
    ++count_;
    return Item{-1, node_.fn_(materialize(*item, node_.input().row_source()))};
  }

 private:
  const MapNode& node_;
};
std::unique_ptr<ItemIterator> MapNode::make_iterator(uint64_t salt) const {
  return std::make_unique<MapIterator>(*this, salt);
}

// ---- filter ----
class FilterNode final : public UnaryNode {
 public:
  FilterNode(NodePtr input, std::function<bool(const Element&)> predicate)
      : UnaryNode("filter", nlohmann::json::object(), std::move(input)), predicate_(std::move(predicate)) {}
  int64_t cardinality() const override { return kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<FilterNode>(single_input(inputs, op()), predicate_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  std::function<bool(const Element&)> predicate_;
};

class FilterIterator final : public UnaryIterator {
 public:
  FilterIterator(const FilterNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    while (std::optional<Item> item = input_->next()) {
      ++count_;
      if (node_.predicate_(materialize(*item, node_.input().row_source()))) return item;
    }
    return std::nullopt;
  }

 private:
  const FilterNode& node_;
};
std::unique_ptr<ItemIterator> FilterNode::make_iterator(uint64_t salt) const {
  return std::make_unique<FilterIterator>(*this, salt);
}

// ---- take ----
class TakeNode final : public UnaryNode {
 public:
  TakeNode(NodePtr input, int64_t count) : UnaryNode("take", {{"count", count}}, std::move(input)), count_(count) {}
  int64_t cardinality() const override {  // TF's rule
    int64_t n = input().cardinality();
    if (n == kUnknownCardinality) return n;
    if (n == kInfiniteCardinality) return count_;
    return count_ < 0 ? n : std::min(n, count_);
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<TakeNode>(single_input(inputs, op()), count_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  int64_t count_;  // -1: all
};

class TakeIterator final : public UnaryIterator {  // count_: elements taken
 public:
  TakeIterator(const TakeNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    if (node_.count_ >= 0 && count_ >= node_.count_) return std::nullopt;
    std::optional<Item> item = input_->next();
    if (item) ++count_;
    return item;
  }

 private:
  const TakeNode& node_;
};
std::unique_ptr<ItemIterator> TakeNode::make_iterator(uint64_t salt) const {
  return std::make_unique<TakeIterator>(*this, salt);
}

// ---- skip ----
class SkipNode final : public UnaryNode {
 public:
  SkipNode(NodePtr input, int64_t count) : UnaryNode("skip", {{"count", count}}, std::move(input)), count_(count) {}
  int64_t cardinality() const override {  // TF's rule
    int64_t n = input().cardinality();
    if (n < 0) return n;
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<SkipNode>(single_input(inputs, op()), count_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  int64_t count_;  // -1: all
};

class SkipIterator final : public UnaryIterator {  // count_: elements skipped so far
 public:
  SkipIterator(const SkipNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    while (node_.count_ < 0 || count_ < node_.count_) {
      if (!input_->next()) return std::nullopt;
      ++count_;
    }
    return input_->next();
  }

 private:
  const SkipNode& node_;
};
std::unique_ptr<ItemIterator> SkipNode::make_iterator(uint64_t salt) const {
  return std::make_unique<SkipIterator>(*this, salt);
}

// ---- shard ----
class ShardNode final : public UnaryNode {
 public:
  ShardNode(NodePtr input, int64_t num_shards, int64_t index)
      : UnaryNode("shard", {{"num_shards", num_shards}, {"index", index}}, std::move(input)),
        num_shards_(num_shards),
        index_(index) {}
  int64_t cardinality() const override {  // TF's rule
    int64_t n = input().cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<ShardNode>(single_input(inputs, op()), num_shards_, index_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  int64_t num_shards_, index_;
};

class ShardIterator final : public UnaryIterator {  // count_: input elements seen
 public:
  ShardIterator(const ShardNode& node, uint64_t salt) : UnaryIterator(node, salt), node_(node) {}
  std::optional<Item> next() override {
    while (std::optional<Item> item = input_->next()) {
      if (count_++ % node_.num_shards_ == node_.index_) return item;
    }
    return std::nullopt;
  }

 private:
  const ShardNode& node_;
};
std::unique_ptr<ItemIterator> ShardNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ShardIterator>(*this, salt);
}

}  // namespace

NodePtr make_map_node(NodePtr input, std::function<Element(const Element&)> fn) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn));
}
NodePtr make_filter_node(NodePtr input, std::function<bool(const Element&)> predicate) {
  return std::make_shared<FilterNode>(std::move(input), std::move(predicate));
}
NodePtr make_take_node(NodePtr input, int64_t count) { return std::make_shared<TakeNode>(std::move(input), count); }
NodePtr make_skip_node(NodePtr input, int64_t count) { return std::make_shared<SkipNode>(std::move(input), count); }
NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardNode>(std::move(input), num_shards, index);
}

}  // namespace lockstep::data::detail
