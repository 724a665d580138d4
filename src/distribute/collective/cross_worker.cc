// The cross-worker toolkit over any Communicator.
#include "lockstep/distribute/collective/cross_worker.h"

#include <algorithm>

#include "lockstep/core/error.h"

namespace lockstep::distribute {

void broadcast_bytes(Communicator* comm, std::string& bytes, int root, const CollectiveOptions& options) {
  if (!comm) return;
  int64_t size = static_cast<int64_t>(bytes.size());
  comm->broadcast(&size, sizeof size, root, options);
  bytes.resize(static_cast<size_t>(size));
  if (size > 0) comm->broadcast(bytes.data(), bytes.size(), root, options);
}

std::vector<std::string> all_gather_bytes(Communicator* comm, const std::string& mine, const CollectiveOptions& options) {
  if (!comm) return {mine};
  const size_t n = static_cast<size_t>(comm->size());
  std::vector<int64_t> sizes(n);
  const int64_t my_size = static_cast<int64_t>(mine.size());
  comm->all_gather(&my_size, sizes.data(), sizeof my_size, options);
  const size_t longest = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<std::string> out;
  if (longest == 0) return std::vector<std::string>(n);
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * n, '\0');
  comm->all_gather(padded.data(), all.data(), longest, options);
  for (size_t r = 0; r < n; ++r) out.push_back(all.substr(r * longest, static_cast<size_t>(sizes[r])));
  return out;
}

int64_t agree(Communicator* comm, int64_t mine, ReduceOp op, const CollectiveOptions& options) {
  LS_CHECK(op != ReduceOp::MEAN, ValueError, "agree() takes SUM, MAX or MIN: a mean of integers is not one");
  if (comm) comm->all_reduce(&mine, 1, DType::int64, op, options);
  return mine;
}

namespace {
// An error as bytes: its kind's letter, then its message ("" for none).
std::string encode(const std::exception_ptr& error) {
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return static_cast<char>(error_kind(e)) + std::string(e.what());
  } catch (...) {
    return static_cast<char>(ErrorKind::kOther) + std::string("unknown error");
  }
}
}  // namespace

void raise_if_any(Communicator* comm, std::exception_ptr error, const CollectiveOptions& options) {
  if (!comm) {
    if (error) std::rethrow_exception(error);
    return;
  }
  const std::vector<std::string> all = all_gather_bytes(comm, encode(error), options);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (static_cast<int>(r) == comm->rank()) std::rethrow_exception(error);
    raise_error(static_cast<ErrorKind>(all[r][0]), all[r].substr(1));
  }
}

namespace {
// Inside on_chief's fn: the other workers wait for it to finish, so an on_chief nested in it runs fn alone.
thread_local int t_on_chief_depth = 0;
}  // namespace

void on_chief(Communicator* comm, const std::function<void()>& fn, const CollectiveOptions& options) {
  if (t_on_chief_depth > 0) return fn();
  std::exception_ptr error;
  if (!comm || comm->rank() == 0) {
    ++t_on_chief_depth;
    struct Leave {
      ~Leave() { --t_on_chief_depth; }
    } leave;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  }
  raise_if_any(comm, error, options);
}

std::vector<std::string> read_on_chief(Communicator* comm, const std::function<std::vector<std::string>()>& read,
                                       const CollectiveOptions& options) {
  if (t_on_chief_depth > 0) return read();  // inside on_chief's fn, on the chief: the others are not listening
  std::vector<std::string> out;
  on_chief(comm, [&] { out = read(); }, options);
  if (!comm) return out;
  int64_t count = agree(comm, comm->rank() == 0 ? static_cast<int64_t>(out.size()) : 0, ReduceOp::SUM, options);
  out.resize(static_cast<size_t>(count));
  for (std::string& bytes : out) broadcast_bytes(comm, bytes, 0, options);
  return out;
}

}  // namespace lockstep::distribute
