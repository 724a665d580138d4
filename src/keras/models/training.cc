// compile / fit / evaluate / predict: Keras' training and test loops. One step runs the model on every
// replica's batch (under a strategy: on all replicas of all workers, gradients all-reduced in the
// optimizer), then updates the loss tracker and metrics on the caller's thread; logs are summed over workers
// and printed by the chief only.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "lockstep/core/logging.h"
#include "models-impl.h"

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

// Keras' checks of array data, before any step: each array holds samples along axis 0, as many as the first.
void check_arrays(const char* what, std::initializer_list<std::pair<const char*, const Tensor*>> arrays) {
  const auto& [x_name, x_ptr] = *arrays.begin();
  const Tensor& x = *x_ptr;
  for (const auto& [name, t] : arrays) {
    if (!t->defined()) continue;
    LS_CHECK(t->rank() >= 1, ValueError, what, ": ", name, " is a scalar; pass an array of samples along axis 0");
    LS_CHECK(t->dim(0) >= 1, ValueError, what, " got no data: ", name, " is empty (shape ", t->shape().str(),
             "); pass at least one sample");
    LS_CHECK(!x.defined() || t->dim(0) == x.dim(0), ValueError, what, ": ", x_name, " has ", x.dim(0), " samples but ",
             name, " has ", t->dim(0), " (shapes ", x.shape().str(), " and ", t->shape().str(),
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

// A double as Python's repr() writes it (0.5, 1.0, 1e-05), for messages that quote Keras'.
std::string python_float(double v) {
  std::array<char, 32> buf{};
  const auto end = std::to_chars(buf.data(), buf.data() + buf.size(), v).ptr;
  std::string s(buf.data(), end);
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Rows [begin, begin + count) of `t` (count -1: to the end), or `t` itself when undefined.
Tensor rows(const Tensor& t, int64_t begin, int64_t count) {
  if (!t.defined()) return t;
  std::vector<int64_t> b(static_cast<size_t>(t.rank()), 0), size(static_cast<size_t>(t.rank()), -1);
  b[0] = begin;
  size[0] = count;
  return raw_ops::slice(t, b, size);
}

// Keras' class_weight as sample weights, times `sample_weight` when given: a sample's class is its label rounded, or
// the argmax of a label of several values (one-hot or probabilities); a class not in the table weighs 1.
Tensor class_sample_weights(const Tensor& y, const Tensor& sample_weight,
                            const std::map<int64_t, double>& class_weight) {
  const int64_t n = y.dim(0), width = n > 0 ? y.numel() / n : 1;
  LS_CHECK(!sample_weight.defined() || sample_weight.numel() == n, ValueError,
           "class_weight multiplies one sample_weight per sample, but sample_weight has shape ",
           sample_weight.shape().str(), " for ", n, " samples; pass sample_weight of shape (", n, ",)");
  const std::vector<double> labels = y.to_vector<double>();
  std::vector<double> w = sample_weight.defined() ? sample_weight.to_vector<double>() : std::vector<double>(n, 1.0);
  for (int64_t i = 0; i < n; ++i) {
    const auto row = labels.begin() + i * width;
    const int64_t c = width > 1 ? std::max_element(row, row + width) - row : std::llrint(*row);
    if (auto it = class_weight.find(c); it != class_weight.end()) w[static_cast<size_t>(i)] *= it->second;
  }
  const bool wide = sample_weight.defined() && sample_weight.dtype() == DType::float64;
  const Shape shape = sample_weight.defined() ? sample_weight.shape() : Shape({n});
  return raw_ops::cast(from_vector<double>(w, shape), wide ? DType::float64 : DType::float32);
}

// The options fit(x, y) alone takes, refused for a dataset (which yields its own weights).
void check_dataset_options(const FitOptions& opt) {
  LS_CHECK(!opt.sample_weight.defined(), ValueError,
           "`sample_weight` argument is not supported when using a dataset as input: the dataset yields (x, y, "
           "sample_weight) itself");
  LS_CHECK(opt.class_weight.empty(), ValueError,
           "`class_weight` argument is not supported by lockstep when using a dataset as input: weight the samples in "
           "the dataset instead (a third component, sample_weight)");
  LS_CHECK(opt.validation_split == 0, ValueError,
           "`validation_split` is only supported for Tensors or NumPy arrays: hold out part of the dataset (take() "
           "and skip()) and pass it as validation_data");
}

// fit()'s validation batches: validation_data's dataset as it is, or its arrays batched by validation_batch_size
// (batch_size when 0).
std::optional<data::Dataset> validation_batches(const FitOptions& opt) {
  if (!opt.validation_data) return std::nullopt;
  const ValidationData& v = *opt.validation_data;
  if (v.dataset) return v.dataset;
  LS_CHECK(opt.validation_batch_size >= 0, ValueError, "fit(): validation_batch_size must be >= 1, got ",
           opt.validation_batch_size);
  check_arrays("fit()", {{"validation_data's x", &v.x},
                         {"validation_data's y", &v.y},
                         {"validation_data's sample_weight", &v.sample_weight}});
  const int64_t batch_size = opt.validation_batch_size > 0 ? opt.validation_batch_size : opt.batch_size;
  return data::Dataset::from_tensor_slices(v.x, v.y, v.sample_weight).batch(batch_size);
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
    ReplicaOutputRef out{0, static_cast<double>(b.x().dim(0)), b.y(), Tensor(), b.sample_weight()};
    Tensor loss;
    if (training) {
      std::vector<Variable> vars = trainable_variables();
      std::vector<Tensor> grads;
      {
        GradientTape tape;
        GradientsToDestinations into_buckets;  // the gradients go to apply_gradients unread
        out.y_pred = (*this)(b.x(), {.training = true});
        loss = (*s_->loss)(b.y(), out.y_pred, b.sample_weight());
        std::vector<Tensor> reg = losses();
        if (!reg.empty()) loss = loss + add_n(reg);
        grads = tape.gradient(scale == 1.0 ? loss : loss * scale, vars);
      }
      s_->optimizer->apply_gradients(grads, vars);
    } else {
      NoGradGuard no_grad;
      out.y_pred = (*this)(b.x(), {.training = false});
      loss = (*s_->loss)(b.y(), out.y_pred, b.sample_weight());
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

std::map<std::string, double> Model::train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight,
                                                    const std::map<int64_t, double>& class_weight) {
  check_compiled(*s_, "fit");
  const Tensor weights = class_weight.empty() ? sample_weight : class_sample_weights(y, sample_weight, class_weight);
  reset_metrics();  // Keras resets metrics each call: the result is this batch's
  auto outputs = run_step({data::Batch{x, y, weights}}, true);
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
  LS_CHECK(opt.validation_freq >= 1, ValueError, "fit(): validation_freq must be >= 1, got ", opt.validation_freq);
  check_dataset_options(opt);
  const std::optional<data::Dataset> validation = validation_batches(opt);
  check_not_empty(dataset, "the dataset passed to fit()");
  if (validation) check_not_empty(*validation, "fit()'s validation_data");
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
    if (validation && (epoch + 1) % opt.validation_freq == 0) {
      Logs val = run_evaluation(*validation, opt.validation_steps, cbs.all);
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
  check_arrays("fit()", {{"x", &x}, {"y", &y}, {"sample_weight", &opt.sample_weight}});
  Tensor weights =
      opt.class_weight.empty() ? opt.sample_weight : class_sample_weights(y, opt.sample_weight, opt.class_weight);
  int64_t train = x.dim(0);
  if (opt.validation_split != 0) {
    LS_CHECK(!opt.validation_data, ValueError, "pass validation_data or validation_split, not both");
    LS_CHECK(opt.validation_split > 0 && opt.validation_split <= 1, ValueError,
             "fit(): validation_split must be a fraction between 0 and 1, got ", opt.validation_split);
    // Keras holds out the last samples, before any shuffling.
    const int64_t n = x.dim(0);
    train = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - opt.validation_split)));
    LS_CHECK(train != 0 && train != n, ValueError, "Training data contains ", n,
             " samples, which is not sufficient to split it into a validation and training set as specified by "
             "`validation_split=",
             python_float(opt.validation_split),
             "`. Either provide more data, or a different value for the `validation_split` argument.");
    opt.validation_data = ValidationData(rows(x, train, -1), rows(y, train, -1), rows(weights, train, -1));
  }
  data::Dataset ds = data::Dataset::from_tensor_slices(rows(x, 0, train), rows(y, 0, train), rows(weights, 0, train));
  if (opt.shuffle) ds = ds.shuffle(train, utils::next_generator().next_u32());
  opt.sample_weight = Tensor();  // in the dataset now
  opt.class_weight.clear();
  opt.validation_split = 0;
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
  LS_CHECK(!opt.sample_weight.defined(), ValueError,
           "`sample_weight` argument is not supported when using a dataset as input: the dataset yields (x, y, "
           "sample_weight) itself");
  check_not_empty(dataset, "the dataset passed to evaluate()");
  const bool chief = !s_->distributed() || s_->strategy->is_chief();
  RunParams params{1, steps_for(dataset, opt.steps, "evaluate()"), chief ? opt.verbose : 0};
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, nullptr);
  return to_map(run_evaluation(dataset, opt.steps, cbs.all));
}

std::map<std::string, double> Model::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "evaluate(): batch_size must be >= 1, got ", opt.batch_size);
  check_arrays("evaluate()", {{"x", &x}, {"y", &y}, {"sample_weight", &opt.sample_weight}});
  const data::Dataset ds = data::Dataset::from_tensor_slices(x, y, opt.sample_weight).batch(opt.batch_size);
  opt.sample_weight = Tensor();  // in the dataset now
  return evaluate(ds, std::move(opt));
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
    outputs.push_back((*this)(batch->x(), {.training = false}));
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

std::vector<Param> fit_params() {
  const FitOptions o;
  return {{"x", nullptr, "the inputs: an array of samples along axis 0, or a dataset of (x, y[, sample_weight])"},
          {"y", nullptr, "the targets, as many as x's samples (None with a dataset)"},
          {"batch_size", nullptr, "samples per step with arrays (None: 32)"},
          {"epochs", o.epochs, "the epoch to train up to"},
          {"verbose", "auto", "0 silent, 1 a progress bar, 2 one line per epoch; \"auto\" is 1"},
          {"callbacks", nullptr, "the callbacks of this run"},
          {"validation_split", o.validation_split, "the fraction of the arrays (the last samples) held out to validate"},
          {"validation_data", nullptr, "(x, y[, sample_weight]) arrays or a dataset to validate on after each epoch"},
          {"shuffle", o.shuffle, "whether arrays are shuffled each epoch"},
          {"class_weight", nullptr, "{class: weight} multiplying each sample's weight"},
          {"sample_weight", nullptr, "each sample's weight in the loss and metrics, with arrays"},
          {"initial_epoch", o.initial_epoch, "the epoch to start at (to resume)"},
          {"steps_per_epoch", nullptr, "steps in an epoch (None: until the data runs out)"},
          {"validation_steps", nullptr, "validation steps (None: until the validation data runs out)"},
          {"validation_batch_size", nullptr, "samples per validation step with arrays (None: batch_size)"},
          {"validation_freq", o.validation_freq, "validate after every validation_freq-th epoch"}};
}

std::vector<Param> evaluate_params() {
  return {{"x", nullptr, "the inputs: an array of samples along axis 0, or a dataset"},
          {"y", nullptr, "the targets (None with a dataset)"},
          {"batch_size", nullptr, "samples per step with arrays (None: 32)"},
          {"verbose", "auto", "0 silent, 1 a progress bar; \"auto\" is 1"},
          {"sample_weight", nullptr, "each sample's weight in the loss and metrics, with arrays"},
          {"steps", nullptr, "steps to run (None: until the data runs out)"},
          {"callbacks", nullptr, "the callbacks of this run"},
          {"return_dict", false, "Python: the results as a dict of names instead of a list"}};
}

std::vector<Param> predict_params() {
  return {{"x", kRequired, "the inputs: an array of samples along axis 0, or a dataset"},
          {"batch_size", nullptr, "samples per step with arrays (None: 32)"},
          {"verbose", "auto", "0 silent, 1 a progress bar; \"auto\" is 1"},
          {"steps", nullptr, "steps to run (None: until the data runs out)"},
          {"callbacks", nullptr, "the callbacks of this run"}};
}

}  // namespace lockstep::keras
