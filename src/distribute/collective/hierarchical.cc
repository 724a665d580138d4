// The hierarchical communicator (hierarchical.h): three phases per collective, inside the host, between hosts,
// inside the host again.
#include "lockstep/distribute/collective/hierarchical.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>

#include "reduce-impl.h"

namespace lockstep::distribute {
namespace {

class HierarchicalCommunicator final : public Communicator {
 public:
  HierarchicalCommunicator(int rank, std::vector<int> host_of, std::unique_ptr<Communicator> local,
                           std::unique_ptr<Communicator> leaders)
      : rank_(rank), host_of_(std::move(host_of)), local_(std::move(local)), leaders_(std::move(leaders)) {
    for (int r = 0; r < size(); ++r) {
      const int host = host_of_[static_cast<size_t>(r)];
      if (static_cast<size_t>(host) >= members_.size()) members_.resize(static_cast<size_t>(host) + 1);
      members_[static_cast<size_t>(host)].push_back(r);
    }
    for (const auto& m : members_) widest_ = std::max(widest_, m.size());
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(host_of_.size()); }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override {
    const ReduceOp rule = op == ReduceOp::MEAN ? ReduceOp::SUM : op;
    detail::visit_reducible(dtype, "all_reduce", [](auto) {});  // a bad dtype is refused before any phase
    guarded([&] {
      local_->all_reduce(data, count, dtype, rule, options);
      if (leaders_) leaders_->all_reduce(data, count, dtype, rule, options);
      local_->broadcast(data, count * dtype_size(dtype), 0, options);
    });
    // Every rank divides the same bits the same way, so MEAN stays identical across ranks.
    if (op == ReduceOp::MEAN)
      detail::visit_reducible(dtype, "hierarchical all_reduce",
                              [&](auto x) { detail::divide_elements<decltype(x)>(data, count, size()); });
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override {
    LS_CHECK(root >= 0 && root < size(), ValueError, "broadcast root must be a rank in [0, ", size(), "), got ", root);
    const int root_host = host_of_[static_cast<size_t>(root)];
    const auto& there = members_[static_cast<size_t>(root_host)];
    const bool here = root_host == host();
    guarded([&] {
      if (here) local_->broadcast(data, bytes, static_cast<int>(std::find(there.begin(), there.end(), root) - there.begin()),
                                  options);
      if (leaders_) leaders_->broadcast(data, bytes, root_host, options);
      if (!here) local_->broadcast(data, bytes, 0, options);
    });
  }

  // Each host gathers its ranks' bytes, the leaders exchange their hosts' (padded to the widest host), and each
  // leader hands the whole, in job rank order, to its host.
  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override {
    guarded([&] {
      std::vector<std::byte> host_bytes(widest_ * bytes);
      local_->all_gather(input, host_bytes.data(), bytes, options);
      if (leaders_) {
        std::vector<std::byte> all(members_.size() * widest_ * bytes);
        leaders_->all_gather(host_bytes.data(), all.data(), widest_ * bytes, options);
        for (size_t h = 0; h < members_.size(); ++h)
          for (size_t i = 0; i < members_[h].size(); ++i)
            if (bytes > 0)
              std::memcpy(static_cast<std::byte*>(output) + static_cast<size_t>(members_[h][i]) * bytes,
                          all.data() + (h * widest_ + i) * bytes, bytes);
      }
      local_->broadcast(output, static_cast<size_t>(size()) * bytes, 0, options);
    });
  }

  void barrier(const CollectiveOptions& options) override {
    guarded([&] {
      local_->barrier(options);
      if (leaders_) leaders_->barrier(options);
      local_->barrier(options);
    });
  }

 private:
  // Runs one collective's phases. Its first failure breaks the communicator: this call and every later one throw
  // it, as the flat backends do (the phases of a broken collective can no longer line up).
  template <typename F>
  void guarded(F&& phases) {
    {
      std::lock_guard lock(mutex_);
      if (failure_) std::rethrow_exception(failure_);
    }
    try {
      phases();
    } catch (const Error&) {
      std::lock_guard lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
      std::rethrow_exception(failure_);
    }
  }

  int host() const { return host_of_[static_cast<size_t>(rank_)]; }

  const int rank_;
  const std::vector<int> host_of_;
  std::vector<std::vector<int>> members_;  // per host, its ranks in job order
  size_t widest_ = 0;                      // the most ranks on one host
  std::unique_ptr<Communicator> local_;
  std::unique_ptr<Communicator> leaders_;
  std::mutex mutex_;              // guards failure_
  std::exception_ptr failure_;    // the first collective error
};

}  // namespace

std::unique_ptr<Communicator> make_hierarchical_communicator(int rank, std::vector<int> host_of,
                                                             std::unique_ptr<Communicator> local,
                                                             std::unique_ptr<Communicator> leaders) {
  const int size = static_cast<int>(host_of.size());
  LS_CHECK(rank >= 0 && rank < size, ValueError, "hierarchical communicator rank must be in [0, ", size, "), got ",
           rank);
  LS_CHECK(local != nullptr, ValueError, "hierarchical communicator needs its host's communicator");
  int hosts = 0, host_rank = 0, host_size = 0;
  for (int r = 0; r < size; ++r) {
    const int h = host_of[static_cast<size_t>(r)];
    LS_CHECK(h >= 0 && h <= hosts, ValueError, "hierarchical communicator: rank ", r, " is on host ", h,
             ", but hosts must be numbered 0, 1, ... in the order of their first rank");
    hosts = std::max(hosts, h + 1);
    if (h == host_of[static_cast<size_t>(rank)]) {
      if (r < rank) ++host_rank;
      ++host_size;
    }
  }
  LS_CHECK(local->rank() == host_rank && local->size() == host_size, ValueError,
           "hierarchical communicator: the host's communicator is rank ", local->rank(), " of ", local->size(),
           ", expected rank ", host_rank, " of ", host_size);
  const bool leads = host_rank == 0;
  LS_CHECK(leads == (leaders != nullptr), ValueError, "hierarchical communicator: rank ", rank,
           leads ? " leads its host and needs" : " does not lead its host and takes no", " communicator between hosts");
  LS_CHECK(!leaders || (leaders->rank() == host_of[static_cast<size_t>(rank)] && leaders->size() == hosts), ValueError,
           "hierarchical communicator: the communicator between hosts is rank ", leaders ? leaders->rank() : -1, " of ",
           leaders ? leaders->size() : 0, ", expected rank ", host_of[static_cast<size_t>(rank)], " of ", hosts);
  return std::make_unique<HierarchicalCommunicator>(rank, std::move(host_of), std::move(local), std::move(leaders));
}

}  // namespace lockstep::distribute
