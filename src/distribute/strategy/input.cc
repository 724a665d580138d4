// Distributed input: a global batch split across replicas (experimental_distribute_dataset, with TF's
// auto-shard policies: FILE rewrites the pipeline so its file readers read a subset of their files), per-pipeline
// datasets from a function, and iterators that stop every worker at the same step.
#include <algorithm>
#include <cstdint>

#include "lockstep/data/dataset_node.h"
#include "strategy-impl.h"

namespace lockstep::distribute {

namespace {

using Policy = data::Options::AutoShardPolicy;

// `node` with each file reader below it reading files index, index + n, index + 2n... of its list; `fewest` becomes the
// smallest number of files of any reader. Null when a source below reads no files (then only DATA can shard it).
data::NodePtr shard_files(const data::NodePtr& node, int n, int index, size_t& fewest) {
  if (node->inputs().empty()) {
    const std::vector<std::string> files = node->files();
    if (files.empty()) return nullptr;
    fewest = std::min(fewest, files.size());
    std::vector<std::string> mine;
    for (size_t i = static_cast<size_t>(index); i < files.size(); i += static_cast<size_t>(n)) mine.push_back(files[i]);
    return node->with_files(std::move(mine));
  }
  std::vector<data::NodePtr> inputs;
  for (const data::NodePtr& input : node->inputs()) {
    data::NodePtr sharded = shard_files(input, n, index, fewest);
    if (!sharded) return nullptr;
    inputs.push_back(std::move(sharded));
  }
  return node->with_inputs(std::move(inputs));
}

// What pipeline `index` of `n` reads when the policy shards `dataset` by FILE (TF's rules: FILE, or AUTO over a
// dataset whose readers have at least n files each); nullopt when it shards by DATA, or not at all.
std::optional<data::Dataset> shard_by_file(const data::Dataset& dataset, int n, int index) {
  const Policy policy = dataset.options().auto_shard_policy;
  if (n <= 1 || policy == Policy::DATA || policy == Policy::OFF) return std::nullopt;
  size_t fewest = SIZE_MAX;
  data::NodePtr sharded = shard_files(dataset.node_ptr(), n, index, fewest);
  if (sharded && fewest >= static_cast<size_t>(n)) return data::Dataset(std::move(sharded), dataset.options());
  LS_CHECK(policy != Policy::FILE || sharded, ValueError,
           "auto-shard policy FILE needs a dataset read from files (TFRecordDataset, TextLineDataset, "
           "make_csv_dataset); this one comes from tensors: use AUTO or DATA");
  LS_CHECK(policy != Policy::FILE, ValueError, "auto-shard policy FILE: the dataset reads ", fewest, " file(s) but there are ",
           n, " workers, so some would read nothing; split the data into at least ", n, " files, or use AUTO or DATA");
  return std::nullopt;
}

}  // namespace

data::Dataset auto_shard_dataset(const data::Dataset& dataset, const InputContext& ctx) {
  const int n = ctx.num_input_pipelines, index = ctx.input_pipeline_id;
  LS_CHECK(n >= 1 && index >= 0 && index < n, ValueError, "auto_shard_dataset: input_pipeline_id ", index,
           " is outside [0, num_input_pipelines = ", n, "); pass the InputContext the strategy made");
  if (std::optional<data::Dataset> own = shard_by_file(dataset, n, index)) return *own;
  if (n == 1 || dataset.options().auto_shard_policy == Policy::OFF) return dataset;
  return dataset.shard(n, index);
}

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
    cross->all_reduce(&missing, 1, DType::float64, ReduceOp::SUM, collective_options(Tag::kInput));
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
  if (node->op() != "batch" && num_replicas_in_sync() == 1) {
    // One replica takes the elements as they come, batched or not, as TF's strategies hand them over.
    auto whole = [dataset](int64_t skip) {
      return std::vector<data::Dataset>{skip > 0 ? dataset.skip(skip) : dataset};
    };
    return DistributedDataset(this, whole(0), whole, 1, dataset);
  }
  LS_CHECK(node->op() == "batch", ValueError,
           "experimental_distribute_dataset on ", num_replicas_in_sync(),
           " replicas needs a dataset whose last step is batch(global_batch_size) "
           "(optionally followed by prefetch()), got one ending in ", node->str(),
           ": batch it, or use distribute_datasets_from_function");
  const int64_t global = node->params().at("batch_size").get<int64_t>();
  impl_->global_batch_size = global;
  const bool drop = node->params().value("drop_remainder", false);
  const int R = num_replicas_in_sync();
  const int64_t per_replica = InputContext{num_workers(), worker_rank(), R}.get_per_replica_batch_size(global);
  const auto policy = dataset.options().auto_shard_policy;
  data::Dataset unbatched(node->inputs().at(0), dataset.options());
  // Sharded by FILE, each worker reads its own files and splits their elements over its local replicas; the split
  // of the files depends on the number of workers, so a position cannot move to another number of them.
  if (std::optional<data::Dataset> own = shard_by_file(unbatched, num_workers(), worker_rank())) {
    auto split = [this, input = *own, per_replica, drop, prefetch](int64_t skip) {
      LS_CHECK(skip == 0, ValueError, "the input position was saved on another number of replicas, but this dataset is "
               "sharded by FILE, whose split of the files depends on the number of workers: restart on the number of "
               "workers that saved it, or shard by DATA (Options.auto_shard_policy)");
      std::vector<data::Dataset> per;
      for (int l = 0; l < num_local_; ++l) {
        data::Dataset d = num_local_ > 1 ? input.shard(num_local_, l) : input;
        d = d.batch(per_replica, drop);
        if (prefetch) d = d.prefetch(*prefetch);
        per.push_back(d);
      }
      return per;
    };
    return DistributedDataset(this, split(0), split, per_replica * num_local_);
  }
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
