// cache(): in memory. The first pass to reach the end publishes what it saw in the node; iterators made
// after that (such as later repeat() epochs) replay it without running the input again.
#include <mutex>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

// One complete (or filling) pass, named by the state of the input iterator it started from, so that a
// restored iterator can tell whether the pass in memory is the one it was reading.
struct CacheStore {
  json input_at_start;
  std::vector<Item> items;
};

class CacheNode final : public UnaryNode {
 public:
  explicit CacheNode(NodePtr input) : UnaryNode("cache", json::object(), std::move(input)) {}
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<CacheNode>(single_input(inputs, op()));
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::shared_ptr<const CacheStore> complete_pass() const {
    std::lock_guard lock(mutex_);
    return complete_;
  }
  void publish(std::shared_ptr<const CacheStore> pass) const {
    std::lock_guard lock(mutex_);
    if (!complete_) complete_ = std::move(pass);
  }

 private:
  mutable std::mutex mutex_;  // iterators on several threads may finish passes at once
  mutable std::shared_ptr<const CacheStore> complete_;
};

// Reads a complete pass, or fills a new one from the input. Either way the state is (the pass's
// starting input state, position); a fill, or a read of a pass this process does not hold, is rebuilt by
// replaying the input.
class CacheIterator final : public ItemIterator {
 public:
  CacheIterator(const CacheNode& node, uint64_t salt) : node_(node) {
    reading_ = node_.complete_pass();
    if (!reading_) start_fill(salt);
  }

  std::optional<Item> next() override {
    if (reading_) {
      if (position_ >= reading_->items.size()) return std::nullopt;
      return reading_->items[position_++];
    }
    std::optional<Item> item = input_->next();
    if (!item) {
      finish_fill();
      return std::nullopt;
    }
    filling_->items.push_back(*item);
    ++position_;
    return item;
  }

  json save_state() const override {
    const CacheStore& pass = reading_ ? *reading_ : *filling_;
    return {{"input_at_start", pass.input_at_start}, {"position", position_}, {"complete", reading_ != nullptr}};
  }

  void restore_state(const json& state) override {
    const json& start = state.at("input_at_start");
    const auto position = state.at("position").get<size_t>();
    const bool complete = state.at("complete").get<bool>();
    reading_ = node_.complete_pass();
    if (!complete || !reading_ || reading_->input_at_start != start) {
      start_fill(0);  // the salt is overwritten by restoring the input's state
      input_->restore_state(start);
      filling_->input_at_start = start;
      replay(*input_, static_cast<int64_t>(position), node_.str(), [&](Item&& item) { filling_->items.push_back(std::move(item)); });
      if (complete) {
        while (std::optional<Item> item = input_->next()) filling_->items.push_back(std::move(*item));
        finish_fill();
      }
    }
    if (reading_) {
      LS_CHECK(position <= reading_->items.size(), ValueError, "restore_state: the saved ", node_.str(), " position ",
               position, " is past its ", reading_->items.size(), " elements; restore into an iterator of the same pipeline");
    }
    position_ = position;
  }

 private:
  void start_fill(uint64_t salt) {
    reading_.reset();
    input_ = node_.input().make_iterator(salt);
    filling_ = std::make_shared<CacheStore>();
    filling_->input_at_start = input_->save_state();
    position_ = 0;
  }
  void finish_fill() {
    if (!filling_) return;
    node_.publish(filling_);
    reading_ = std::move(filling_);  // ours, even if another iterator published first
    input_.reset();
  }

  const CacheNode& node_;
  std::shared_ptr<const CacheStore> reading_;  // set when reading a complete pass
  std::shared_ptr<CacheStore> filling_;        // set while filling
  std::unique_ptr<ItemIterator> input_;
  size_t position_ = 0;
};

std::unique_ptr<ItemIterator> CacheNode::make_iterator(uint64_t salt) const {
  return std::make_unique<CacheIterator>(*this, salt);
}

}  // namespace

NodePtr make_cache_node(NodePtr input) { return std::make_shared<CacheNode>(std::move(input)); }

}  // namespace lockstep::data::detail
