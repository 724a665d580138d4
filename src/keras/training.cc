// compile / fit / evaluate / predict: Keras' training and test loops. One step runs the model on every
// replica's batch (under a strategy: on all replicas of all workers, gradients all-reduced in the
// optimizer), then updates the loss tracker and metrics on the caller's thread; logs are summed over workers
// and printed by the chief only.
#include <cmath>

#include "lockstep/core/logging.h"
#include "model-impl.h"

namespace lockstep::keras {

namespace {
// The callbacks of one run, called in order.
struct CallbackList {
  std::vector<CallbackPtr> all;
  template <typename F> void each(F&& f) {
    for (const CallbackPtr& c : all) f(*c);
  }
};

CallbackList make_callbacks(Model* model, std::vector<CallbackPtr> user, const RunParams& params,
                            std::shared_ptr<callbacks::History> history) {
  CallbackList list;
  if (params.verbose) list.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  for (CallbackPtr& c : user) list.all.push_back(std::move(c));
  if (history) list.all.push_back(history);
  for (const CallbackPtr& c : list.all) {
    c->set_model(model);
    c->set_params(params);
  }
  return list;
}

std::map<std::string, double> to_map(const Logs& logs) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : logs.items()) out[k] = v;
  return out;
}

// Steps in one pass over `dataset`, when known; throws when an infinite dataset has no step count.
int64_t steps_for(const data::Dataset& dataset, int64_t steps, const char* what) {
  if (steps > 0) return steps;
  const int64_t n = dataset.cardinality();
  LS_CHECK(n != -1, ValueError, "the dataset passed to ", what,
           " repeats forever (repeat() without a count): pass steps_per_epoch / steps to say how many batches to use");
  return n >= 0 ? n : -1;
}

// Keras' checks of array data, before any step: each array holds samples along axis 0, as many as x.
void check_arrays(const char* what, std::initializer_list<std::pair<const char*, const Tensor*>> arrays) {
  const Tensor& x = *arrays.begin()->second;
  for (const auto& [name, t] : arrays) {
    if (!t->defined()) continue;
    LS_CHECK(t->rank() >= 1, ValueError, what, ": ", name, " is a scalar; pass an array of samples along axis 0");
    LS_CHECK(t->dim(0) >= 1, ValueError, what, " got no data: ", name, " is empty (shape ", t->shape().str(),
             "); pass at least one sample");
    LS_CHECK(!x.defined() || t->dim(0) == x.dim(0), ValueError, what, ": x has ", x.dim(0), " samples but ", name,
             " has ", t->dim(0), " (shapes ", x.shape().str(), " and ", t->shape().str(),
             "); pass the same number of samples in each");
  }
}

// An empty dataset would run no step and report a loss of 0 (Keras 3 reports nothing at all; Keras 2 raised):
// refused before any step when its cardinality says so, and after a first pass that gave no batch otherwise.
constexpr const char* kEmptyHint =
    "; check what made it (a filter that drops every element, take(0), shard() into more shards than elements, a "
    "file without records)";
void check_not_empty(const data::Dataset& dataset, const char* what) {
  LS_CHECK(dataset.cardinality() != 0, ValueError, what, " is empty: it yields no batches", kEmptyHint);
}

void check_compiled(const Model::State& s, const char* what) {
  LS_CHECK(s.optimizer && s.loss, RuntimeError, "you must call compile() with an optimizer and a loss before ", what,
           "()");
}

}  // namespace

// Each step's batches: one, or one per local replica of the model's strategy.
class Model::StepInput {
 public:
  StepInput(Model::State& s, const data::Dataset& dataset, uint64_t iteration) {
    // Through the strategy even with one replica: its input position is saved in the global stream, so a
    // backup restores on any number of workers.
    if (s.strategy) {
      distributed_ = s.strategy->experimental_distribute_dataset(dataset).make_iterator(iteration);
    } else {
      plain_ = dataset.make_iterator(iteration);
    }
  }
  std::optional<std::vector<data::Batch>> next() {
    if (distributed_) {
      auto b = distributed_->next();
      if (!b) return std::nullopt;
      return std::move(b->values);
    }
    auto b = plain_->next();
    if (!b) return std::nullopt;
    return std::vector<data::Batch>{std::move(*b)};
  }
  nlohmann::json save_state() const { return distributed_ ? distributed_->save_state() : plain_->save_state(); }
  void restore_state(const nlohmann::json& state) {
    if (distributed_)
      distributed_->restore_state(state);
    else
      plain_->restore_state(state);
  }

 private:
  std::optional<data::Iterator> plain_;
  std::optional<distribute::DistributedDataset::Iterator> distributed_;
};

bool Model::State::distributed() const {
  return strategy && (strategy->num_replicas_in_sync() > 1 || strategy->num_workers() > 1);
}

void Model::compile(CompileOptions options) {
  LS_CHECK(options.optimizer.ptr != nullptr, ValueError, "compile() needs an optimizer");
  s_->optimizer = options.optimizer.ptr;
  s_->loss = options.loss.ptr;
  s_->metrics.clear();
  for (const MetricRef& m : options.metrics)
    s_->metrics.push_back(m.ptr ? m.ptr : metrics::get(m.name, s_->loss ? s_->loss->name() : ""));
  s_->stop_training = false;
}

std::shared_ptr<optimizers::Optimizer> Model::optimizer() const { return s_->optimizer; }
std::shared_ptr<losses::Loss> Model::loss() const { return s_->loss; }
const std::vector<std::shared_ptr<metrics::Metric>>& Model::metrics() const { return s_->metrics; }
void Model::set_stop_training(bool stop) { s_->stop_training = stop; }
bool Model::stop_training() const { return s_->stop_training; }

void Model::reset_metrics() {
  s_->loss_total = s_->loss_count = 0;
  for (auto& m : s_->metrics) m->reset_state();
}

Logs Model::metric_logs() const {
  // Under a strategy the accumulators are summed over workers first: every worker reports the same numbers.
  // (What a sync-on-read metric's result() does, for all of them with one all-reduce.)
  std::vector<double> state{s_->loss_total, s_->loss_count};
  std::vector<size_t> sizes;
  for (const auto& m : s_->metrics) {
    std::vector<double> local = m->state();
    sizes.push_back(local.size());
    state.insert(state.end(), local.begin(), local.end());
  }
  if (s_->distributed() && s_->strategy->num_workers() > 1) s_->strategy->all_reduce_sum(state);
  Logs logs;
  logs.set("loss", state[1] > 0 ? state[0] / state[1] : 0.0);
  auto at = state.begin() + 2;
  for (size_t i = 0; i < s_->metrics.size(); ++i) {
    const auto n = static_cast<std::ptrdiff_t>(sizes[i]);
    logs.set(s_->metrics[i]->name(), s_->metrics[i]->result_of(std::vector<double>(at, at + n)));
    at += n;
  }
  return logs;
}

void Model::record_outputs(const std::vector<ReplicaOutputRef>& outputs) {
  NoGradGuard no_grad;
  for (const ReplicaOutputRef& o : outputs) {
    s_->loss_total += o.loss * o.examples;
    s_->loss_count += o.examples;
    for (auto& m : s_->metrics) m->update_state(o.y, o.y_pred, o.sample_weight);
  }
}

std::vector<Model::ReplicaOutputRef> Model::run_step(const std::vector<data::Batch>& batches, bool training) {
  // One replica's work. Under a strategy the loss is scaled by 1 / num_replicas_in_sync, so that the
  // all-reduced (summed) gradients are those of the mean loss over the global batch, as in Keras.
  auto replica_step = [this, training](const data::Batch& b) {
    losses::KerasLoopScope keras_loop;
    const double scale = s_->distributed() ? 1.0 / s_->strategy->num_replicas_in_sync() : 1.0;
    ReplicaOutputRef out{0, static_cast<double>(b.x.dim(0)), b.y, Tensor(), b.sample_weight};
    Tensor loss;
    if (training) {
      std::vector<Variable> vars = trainable_variables();
      std::vector<Tensor> grads;
      {
        GradientTape tape;
        GradientsToDestinations into_buckets;  // the gradients go to apply_gradients unread
        out.y_pred = (*this)(b.x, {.training = true});
        loss = (*s_->loss)(b.y, out.y_pred, b.sample_weight);
        std::vector<Tensor> reg = losses();
        if (!reg.empty()) loss = loss + add_n(reg);
        grads = tape.gradient(scale == 1.0 ? loss : loss * scale, vars);
      }
      s_->optimizer->apply_gradients(grads, vars);
    } else {
      NoGradGuard no_grad;
      out.y_pred = (*this)(b.x, {.training = false});
      loss = (*s_->loss)(b.y, out.y_pred, b.sample_weight);
      std::vector<Tensor> reg = losses();
      if (!reg.empty()) loss = loss + add_n(reg);
    }
    out.loss = loss.item<double>();
    out.y_pred = stop_gradient(out.y_pred);
    return out;
  };
  std::vector<ReplicaOutputRef> outputs;
  if (s_->distributed()) {
    distribute::PerReplica<data::Batch> per{batches};
    outputs = s_->strategy->run(replica_step, per).values;
  } else {
    outputs.push_back(replica_step(batches.at(0)));
  }
  record_outputs(outputs);
  return outputs;
}

std::map<std::string, double> Model::train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  check_compiled(*s_, "fit");
  reset_metrics();  // Keras resets metrics each call: the result is this batch's
  auto outputs = run_step({data::Batch{x, y, sample_weight}}, true);
  std::map<std::string, double> out = to_map(metric_logs());
  out["loss"] = outputs[0].loss;
  return out;
}

std::map<std::string, double> Model::test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  check_compiled(*s_, "evaluate");
  reset_metrics();
  run_step({data::Batch{x, y, sample_weight}}, false);
  return to_map(metric_logs());
}

callbacks::History Model::fit(const data::Dataset& dataset, FitOptions opt) {
  check_compiled(*s_, "fit");
  LS_CHECK(opt.epochs >= 1 && opt.initial_epoch >= 0, ValueError, "fit() needs epochs >= 1 and initial_epoch >= 0, got ",
           opt.epochs, " and ", opt.initial_epoch);
  check_not_empty(dataset, "the dataset passed to fit()");
  if (opt.validation_data) check_not_empty(*opt.validation_data, "fit()'s validation_data");
  const bool fixed_steps = opt.steps_per_epoch > 0;
  const bool chief = !s_->distributed() || s_->strategy->is_chief();
  RunParams params{opt.epochs, steps_for(dataset, opt.steps_per_epoch, "fit()"), chief ? opt.verbose : 0};
  auto history = std::make_shared<callbacks::History>();
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, history);
  s_->stop_training = false;

  Logs none;
  s_->fit = Model::State::FitProgress{};  // not emplace(): clang 14 does not see its default constructor
  s_->resume.reset();
  struct EndFit {
    Model::State& s;
    ~EndFit() {
      s.fit.reset();
      s.resume.reset();
    }
  } end_fit{*s_};
  cbs.each([&](Callback& c) { c.on_train_begin(none); });
  // A callback may have restored a backup of an interrupted fit() (BackupAndRestore): continue at its epoch
  // and step, with its input position, metric accumulators and history.
  int64_t first_epoch = opt.initial_epoch, first_step = 0;
  Model::State::FitProgress& progress = *s_->fit;
  if (s_->resume) {
    const nlohmann::json& r = *s_->resume;
    first_epoch = r["epoch"].get<int64_t>();
    first_step = r["step_in_epoch"].get<int64_t>();
    progress.total_steps = r["total_steps"].get<int64_t>();
    progress.finished = r["finished"];
    for (const nlohmann::json& e : progress.finished) {
      history->epoch.push_back(e["epoch"].get<int64_t>());
      for (const auto& [k, v] : e["logs"].items()) history->history[k].push_back(v.get<double>());
    }
  }
  // With steps_per_epoch the iterator runs on across epochs (Keras); otherwise each epoch is one pass, whose
  // shuffle order depends on the epoch number only, so a resumed run sees the same order as an unbroken one.
  auto input = std::make_unique<StepInput>(*s_, dataset, fixed_steps ? 0 : static_cast<uint64_t>(first_epoch));
  if (s_->resume && (fixed_steps || first_step > 0)) input->restore_state((*s_->resume)["input"]);
  progress.input_position = [&] { return input->save_state(); };
  for (int64_t epoch = first_epoch; epoch < opt.epochs && !s_->stop_training; ++epoch) {
    const bool resumed = s_->resume && epoch == first_epoch && first_step > 0;
    reset_metrics();
    if (resumed) {
      const nlohmann::json& r = *s_->resume;
      s_->loss_total = r["loss_total"].get<double>();
      s_->loss_count = r["loss_count"].get<double>();
      for (size_t i = 0; i < s_->metrics.size(); ++i) s_->metrics[i]->set_state(r["metrics"][i].get<std::vector<double>>());
    }
    progress.epoch = epoch;
    progress.steps_done = resumed ? first_step : 0;
    progress.epoch_done = false;
    cbs.each([&](Callback& c) { c.on_epoch_begin(epoch, none); });
    if (!fixed_steps && epoch > first_epoch) input = std::make_unique<StepInput>(*s_, dataset, static_cast<uint64_t>(epoch));
    for (int64_t step = progress.steps_done; !fixed_steps || step < opt.steps_per_epoch; ++step) {
      std::optional<std::vector<data::Batch>> batches = input->next();
      if (!batches) {
        // Every worker ends the pass at the same step (the distributed input agrees), so all raise together.
        LS_CHECK(progress.total_steps > 0, ValueError,
                 "the dataset passed to fit() is empty: its first pass gave no batch", kEmptyHint);
        if (fixed_steps) {
          log(LogLevel::warning, "your input ran out of data after ", step, " steps of epoch ", epoch + 1,
              ": make sure the dataset can produce steps_per_epoch * epochs batches (use repeat()); training stops");
          s_->stop_training = true;
        }
        break;
      }
      cbs.each([&](Callback& c) { c.on_train_batch_begin(step, none); });
      run_step(*batches, true);
      progress.steps_done = step + 1;
      ++progress.total_steps;
      Logs logs = metric_logs();
      cbs.each([&](Callback& c) { c.on_train_batch_end(step, logs); });
      if (s_->stop_training) break;
    }
    Logs epoch_logs = metric_logs();
    if (opt.validation_data) {
      Logs val = run_evaluation(*opt.validation_data, opt.validation_steps, cbs.all);
      for (const auto& [k, v] : val.items()) epoch_logs.set("val_" + k, v);
    }
    nlohmann::json logs_json = nlohmann::json::object();
    for (const auto& [k, v] : epoch_logs.items()) logs_json[k] = v;
    progress.finished.push_back({{"epoch", epoch}, {"logs", logs_json}});
    progress.epoch_done = true;
    cbs.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  cbs.each([&](Callback& c) { c.on_train_end(none); });
  return *history;
}

callbacks::History Model::fit(const Tensor& x, const Tensor& y, FitOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "fit(): batch_size must be >= 1, got ", opt.batch_size);
  check_arrays("fit()", {{"x", &x}, {"y", &y}});
  data::Dataset ds = data::Dataset::from_tensor_slices(x, y);
  if (opt.shuffle) ds = ds.shuffle(x.dim(0), utils::next_generator().next_u32());
  return fit(ds.batch(opt.batch_size), std::move(opt));
}

callbacks::History Model::fit(const distribute::DistributedDataset& dataset, FitOptions opt) {
  LS_CHECK(dataset.strategy() == s_->strategy, ValueError,
           "fit() got a dataset distributed by another strategy than the model's (",
           s_->strategy ? "the one whose scope built it" : "none: it was built outside any strategy's scope",
           "): distribute it with the model's strategy, or pass the dataset itself");
  LS_CHECK(dataset.source().has_value(), ValueError,
           "fit() takes experimental_distribute_dataset's result, not distribute_datasets_from_function's: pass "
           "fit() the batched dataset itself, or train in a custom loop");
  return fit(*dataset.source(), std::move(opt));  // split again the same way by the model's strategy
}

Logs Model::run_evaluation(const data::Dataset& dataset, int64_t steps, const std::vector<CallbackPtr>& callbacks) {
  steps_for(dataset, steps, "evaluate()");
  CallbackList cbs{callbacks};
  reset_metrics();
  Logs none;
  cbs.each([&](Callback& c) { c.on_test_begin(none); });
  StepInput input(*s_, dataset, 0);
  for (int64_t step = 0; steps <= 0 || step < steps; ++step) {
    std::optional<std::vector<data::Batch>> batches = input.next();
    LS_CHECK(batches || step > 0, ValueError,
             "the dataset to evaluate (evaluate()'s, or fit()'s validation_data) is empty: its pass gave no batch",
             kEmptyHint);
    if (!batches) break;
    cbs.each([&](Callback& c) { c.on_test_batch_begin(step, none); });
    run_step(*batches, false);
    Logs logs = metric_logs();
    cbs.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  Logs logs = metric_logs();
  cbs.each([&](Callback& c) { c.on_test_end(logs); });
  return logs;
}

std::map<std::string, double> Model::evaluate(const data::Dataset& dataset, EvaluateOptions opt) {
  check_compiled(*s_, "evaluate");
  check_not_empty(dataset, "the dataset passed to evaluate()");
  const bool chief = !s_->distributed() || s_->strategy->is_chief();
  RunParams params{1, steps_for(dataset, opt.steps, "evaluate()"), chief ? opt.verbose : 0};
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, nullptr);
  return to_map(run_evaluation(dataset, opt.steps, cbs.all));
}

std::map<std::string, double> Model::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "evaluate(): batch_size must be >= 1, got ", opt.batch_size);
  check_arrays("evaluate()", {{"x", &x}, {"y", &y}});
  return evaluate(data::Dataset::from_tensor_slices(x, y).batch(opt.batch_size), std::move(opt));
}

Tensor Model::predict(const data::Dataset& dataset, PredictOptions opt) {
  check_not_empty(dataset, "the dataset passed to predict()");
  RunParams params{1, steps_for(dataset, opt.steps, "predict()"), opt.verbose};
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, nullptr);
  Logs none;
  cbs.each([&](Callback& c) { c.on_predict_begin(none); });
  std::vector<Tensor> outputs;
  data::Iterator it = dataset.make_iterator();
  NoGradGuard no_grad;
  for (int64_t step = 0; opt.steps <= 0 || step < opt.steps; ++step) {
    std::optional<data::Element> batch = it.next();
    if (!batch) break;
    cbs.each([&](Callback& c) { c.on_predict_batch_begin(step, none); });
    outputs.push_back((*this)(batch->x, {.training = false}));
    cbs.each([&](Callback& c) { c.on_predict_batch_end(step, none); });
  }
  cbs.each([&](Callback& c) { c.on_predict_end(none); });
  LS_CHECK(!outputs.empty(), ValueError, "the dataset passed to predict() is empty: its pass gave no batch",
           kEmptyHint);
  return raw_ops::concat(outputs, 0);
}

Tensor Model::predict(const Tensor& x, PredictOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "predict(): batch_size must be >= 1, got ", opt.batch_size);
  check_arrays("predict()", {{"x", &x}});
  return predict(data::Dataset::from_tensor_slices(x).batch(opt.batch_size), std::move(opt));
}

}  // namespace lockstep::keras
