// prefetch(): a background thread runs the input up to buffer_size elements ahead. Each queued element
// carries the input's state from just before it was pulled, which is the state to save while it waits;
// errors travel through the queue and are re-thrown by next(). The thread starts on the first next() and
// is joined when the iterator is destroyed or restored; no wait is unbounded.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class PrefetchNode final : public UnaryNode {
 public:
  PrefetchNode(NodePtr input, int64_t buffer_size)
      : UnaryNode("prefetch", {{"buffer_size", buffer_size}}, std::move(input)), buffer_size_(buffer_size) {}
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<PrefetchNode>(single_input(inputs, op()), buffer_size_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  int64_t buffer_size_;
};

class PrefetchIterator final : public ItemIterator {
 public:
  PrefetchIterator(const PrefetchNode& node, uint64_t salt)
      : capacity_(static_cast<size_t>(node.buffer_size_)), input_(node.input().make_iterator(salt)) {}
  ~PrefetchIterator() override { stop(); }

  std::optional<Item> next() override {
    if (!thread_.joinable() && !finished_) start();
    std::unique_lock lock(mutex_);
    if (error_) std::rethrow_exception(error_);
    if (finished_ && queue_.empty()) return std::nullopt;
    // The producer always pushes something (an element, the end or an error) unless stopped, and only
    // this thread stops it, so this wait ends.
    ready_.wait(lock, [&] { return !queue_.empty(); });
    Entry entry = std::move(queue_.front());
    queue_.pop_front();
    space_.notify_one();
    if (entry.error || !entry.item) last_state_ = std::move(entry.state_before);  // a sticky end or error
    if (entry.error) std::rethrow_exception(error_ = entry.error);
    if (!entry.item) finished_ = true;
    return std::move(entry.item);
  }

  json save_state() const override {
    std::lock_guard lock(mutex_);
    if (!queue_.empty()) return queue_.front().state_before;
    if (finished_ || error_) return last_state_;
    if (pulling_) return *pulling_;
    return input_->save_state();  // the producer is not touching the input: it needs mutex_ to start a pull
  }

  void restore_state(const json& state) override {
    stop();
    queue_.clear();
    finished_ = false;
    error_ = nullptr;
    input_->restore_state(state);
  }

 private:
  struct Entry {
    json state_before;
    std::optional<Item> item;  // nullopt with no error: the end
    std::exception_ptr error;
  };

  void start() {
    stopping_ = false;
    thread_ = std::thread([this] { produce(); });
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    space_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void produce() {
    for (;;) {
      Entry entry;
      {
        std::unique_lock lock(mutex_);
        space_.wait(lock, [&] { return stopping_ || queue_.size() < capacity_; });
        if (stopping_) return;
        try {
          pulling_ = input_->save_state();
        } catch (...) {
          entry.error = std::current_exception();
        }
      }
      try {
        if (!entry.error) entry.item = input_->next();
      } catch (...) {
        entry.error = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      if (pulling_) entry.state_before = std::move(*pulling_);
      pulling_.reset();
      const bool last = entry.error || !entry.item;
      queue_.push_back(std::move(entry));
      ready_.notify_one();
      if (last) return;
    }
  }

  const size_t capacity_;
  std::unique_ptr<ItemIterator> input_;
  mutable std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<Entry> queue_;
  std::optional<json> pulling_;  // the input's state while the producer pulls from it
  json last_state_;              // the state before the end or error that was handed out
  bool finished_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

std::unique_ptr<ItemIterator> PrefetchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<PrefetchIterator>(*this, salt);
}

}  // namespace

NodePtr make_prefetch_node(NodePtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace lockstep::data::detail
