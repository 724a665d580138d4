// Distributed input: a global batch split across replicas (experimental_distribute_dataset, with TF's
// auto-shard policies), per-pipeline datasets from a function, and iterators that stop every worker at the
// same step.
#include "lockstep/data/dataset_node.h"
#include "strategy-impl.h"

namespace lockstep::distribute {

DistributedDataset::DistributedDataset(Strategy* strategy, std::vector<data::Dataset> per_replica, Resplit resplit,
                                       int64_t global_batch, std::optional<data::Dataset> source)
    : strategy_(strategy),
      datasets_(std::move(per_replica)),
      resplit_(std::move(resplit)),
      global_batch_(global_batch),
      source_(std::move(source)) {}

DistributedDataset::Iterator DistributedDataset::make_iterator(uint64_t iteration) const {
  Iterator it;
  it.strategy_ = strategy_;
  it.resplit_ = resplit_;
  it.global_batch_ = global_batch_;
  it.iteration_ = iteration;
  for (const data::Dataset& d : datasets_) it.iterators_.push_back(d.make_iterator(iteration));
  return it;
}

void DistributedDataset::Iterator::rebuild(int64_t skip) {
  iterators_.clear();
  for (const data::Dataset& d : resplit_(skip)) iterators_.push_back(d.make_iterator(iteration_));
  skip_ = elements_ = skip;
  fetched_ = false;
  current_.reset();
}

DistributedDataset::Iterator DistributedDataset::begin() const {
  return make_iterator(datasets_.empty() ? 0 : datasets_[0].node().take_iteration_number());
}

std::optional<PerReplica<data::Batch>> DistributedDataset::Iterator::next() {
  if (fetched_) {
    fetched_ = false;
    return std::move(current_);
  }
  PerReplica<data::Batch> out;
  double missing = 0;
  for (data::Iterator& it : iterators_) {
    std::optional<data::Element> e = it.next();
    if (e) out.values.push_back(std::move(*e));
    else missing += 1;
  }
  // Workers agree to stop together: a worker whose shard ran out would otherwise leave the others
  // waiting in the next all-reduce.
  if (Communicator* cross = strategy_->cross_worker()) {
    cross->all_reduce(&missing, 1, DType::float64, ReduceOp::SUM, {kInputTag, std::chrono::seconds(600)});
  }
  if (missing > 0) return std::nullopt;
  elements_ += global_batch_;
  return out;
}

void DistributedDataset::Iterator::fetch() const {
  if (fetched_) return;
  current_ = const_cast<Iterator*>(this)->next();
  fetched_ = true;
}

const PerReplica<data::Batch>& DistributedDataset::Iterator::operator*() const {
  fetch();
  LS_CHECK(current_.has_value(), RuntimeError, "dereferenced a distributed iterator past its end");
  return *current_;
}

DistributedDataset::Iterator& DistributedDataset::Iterator::operator++() {
  fetch();
  fetched_ = false;
  current_.reset();
  return *this;
}

bool DistributedDataset::Iterator::operator==(std::default_sentinel_t) const {
  fetch();
  return !current_.has_value();
}

nlohmann::json DistributedDataset::Iterator::save_state() const {
  LS_CHECK(!fetched_, RuntimeError, "save the distributed iterator's state between steps, not with a batch pending");
  nlohmann::json replicas = nlohmann::json::array();
  for (const data::Iterator& it : iterators_) replicas.push_back(it.save_state());
  return {{"num_replicas", strategy_->num_replicas_in_sync()},
          {"iteration", iteration_},
          {"skip", skip_},
          {"elements", elements_},
          {"replicas", std::move(replicas)}};
}

void DistributedDataset::Iterator::restore_state(const nlohmann::json& state) {
  try {
    const int saved_replicas = state.at("num_replicas").get<int>();
    const int64_t skip = state.at("skip").get<int64_t>(), elements = state.at("elements").get<int64_t>();
    LS_CHECK(saved_replicas >= 1 && skip >= 0 && elements >= 0, ValueError, "saved distributed input state has ",
             saved_replicas, " replicas, skips ", skip, " and has produced ", elements,
             " elements: these are counts, and at least one replica; pass what save_state() returned");
    iteration_ = state.at("iteration").get<uint64_t>();
    if (saved_replicas != strategy_->num_replicas_in_sync()) {
      LS_CHECK(resplit_ != nullptr, ValueError, "the input position was saved by ", saved_replicas,
               " replicas but this job has ", strategy_->num_replicas_in_sync(),
               ": only experimental_distribute_dataset's input can continue on another number of replicas; "
               "restart on the same number of workers");
      rebuild(elements);  // the same element of the global stream, split the new way
      return;
    }
    if (skip != skip_) {
      LS_CHECK(resplit_ != nullptr, ValueError, "saved input state skips ", skip,
               " elements but this distributed dataset cannot; restore into the iterator of the same pipeline");
      rebuild(skip);
    }
    const nlohmann::json& replicas = state.at("replicas");
    LS_CHECK(replicas.is_array() && replicas.size() == iterators_.size(), ValueError, "saved input state has ",
             replicas.is_array() ? replicas.size() : 0, " replica pipelines but this worker has ", iterators_.size());
    for (size_t i = 0; i < iterators_.size(); ++i) iterators_[i].restore_state(replicas[i]);
    elements_ = elements;
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(make_message("saved distributed input state is malformed (", e.what(),
                                  "); pass what DistributedDataset::Iterator::save_state() returned"));
  }
  fetched_ = false;
  current_.reset();
}

DistributedDataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) {
  // Find the final batch(), possibly under prefetch(): each replica rebatches to its share of it.
  data::NodePtr node = dataset.node_ptr();
  std::optional<int64_t> prefetch;
  if (node->op() == "prefetch") {
    prefetch = node->params().value("buffer_size", int64_t{2});
    node = node->inputs().at(0);
  }
  LS_CHECK(node->op() == "batch", ValueError,
           "experimental_distribute_dataset needs a dataset whose last step is batch(global_batch_size) "
           "(optionally followed by prefetch()), got one ending in ", node->str(),
           ": batch it, or use distribute_datasets_from_function");
  const int64_t global = node->params().at("batch_size").get<int64_t>();
  impl_->global_batch_size = global;
  const bool drop = node->params().value("drop_remainder", false);
  const int R = num_replicas_in_sync();
  const int64_t per_replica = InputContext{num_workers(), worker_rank(), R}.get_per_replica_batch_size(global);
  const auto policy = dataset.options().auto_shard_policy;
  LS_CHECK(policy != data::Options::AutoShardPolicy::FILE || num_workers() == 1, ValueError,
           "auto-shard policy FILE needs a dataset read from files; this one comes from tensors: use AUTO or DATA");
  data::Dataset unbatched(node->inputs().at(0), dataset.options());
  if (R > 1) {
    const int64_t n = unbatched.cardinality();
    LS_CHECK(n < 0 || n >= R, ValueError, "the dataset has only ", n, " element(s): split across ", R,
             " replicas some would receive no data; use more data or fewer replicas");
  }
  // Sharding elements before batching: replica g of R takes elements g, g + R, g + 2R, ... of the (shuffled)
  // stream and batches them by per_replica, so at every step the replicas together hold exactly the global
  // batch's elements; a final partial global batch is spread over the replicas; and each replica copies only
  // its own rows. AUTO and DATA shard over all replicas of all workers; OFF gives every worker all data and
  // splits it over its local replicas only. `skip` drops the stream's first elements: a position saved on
  // another number of replicas continues at the same element.
  auto split = [this, unbatched, policy, R, per_replica, drop, prefetch](int64_t skip) {
    const data::Dataset input = skip > 0 ? unbatched.skip(skip) : unbatched;
    std::vector<data::Dataset> per;
    for (int l = 0; l < num_local_; ++l) {
      data::Dataset d = input;
      if (policy == data::Options::AutoShardPolicy::OFF) {
        if (num_local_ > 1) d = d.shard(num_local_, l);
      } else if (R > 1) {
        d = d.shard(R, worker_rank() * num_local_ + l);
      }
      d = d.batch(per_replica, drop);
      if (prefetch) d = d.prefetch(*prefetch);
      per.push_back(d);
    }
    return per;
  };
  // With OFF every worker reads the whole stream: a worker's step consumes its local replicas' share only.
  const int64_t consumed = policy == data::Options::AutoShardPolicy::OFF ? per_replica * num_local_ : global;
  return DistributedDataset(this, split(0), split, consumed, dataset);
}

DistributedDataset Strategy::distribute_datasets_from_function(const std::function<data::Dataset(const InputContext&)>& fn) {
  // One input pipeline per worker (TF's rule for MultiWorkerMirroredStrategy); its batches go round-robin
  // to the local replicas.
  InputContext ctx{num_workers(), worker_rank(), num_replicas_in_sync()};
  data::Dataset pipeline = fn(ctx);
  std::vector<data::Dataset> per;
  for (int l = 0; l < num_local_; ++l) per.push_back(num_local_ > 1 ? pipeline.shard(num_local_, l) : pipeline);
  return DistributedDataset(this, std::move(per));
}

}  // namespace lockstep::distribute
