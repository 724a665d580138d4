// compile / fit / evaluate / predict: Keras' training and test loops over data::Dataset iterators.
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

CallbackList make_callbacks(Sequential* model, std::vector<CallbackPtr> user, const RunParams& params,
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
}  // namespace

void Sequential::compile(CompileOptions options) {
  LS_CHECK(options.optimizer.ptr != nullptr, ValueError, "compile() needs an optimizer");
  s_->optimizer = options.optimizer.ptr;
  s_->loss = options.loss.ptr;
  s_->metrics.clear();
  for (const MetricRef& m : options.metrics)
    s_->metrics.push_back(m.ptr ? m.ptr : metrics::get(m.name, s_->loss ? s_->loss->name() : ""));
  s_->stop_training = false;
}

std::shared_ptr<optimizers::Optimizer> Sequential::optimizer() const { return s_->optimizer; }
std::shared_ptr<losses::Loss> Sequential::loss() const { return s_->loss; }
const std::vector<std::shared_ptr<metrics::Metric>>& Sequential::metrics() const { return s_->metrics; }
void Sequential::set_stop_training(bool stop) { s_->stop_training = stop; }
bool Sequential::stop_training() const { return s_->stop_training; }

void Sequential::reset_metrics() {
  s_->loss_total = s_->loss_count = 0;
  for (auto& m : s_->metrics) m->reset_state();
}

Logs Sequential::metric_logs() const {
  Logs logs;
  logs.set("loss", s_->loss_count > 0 ? s_->loss_total / s_->loss_count : 0.0);
  for (const auto& m : s_->metrics) logs.set(m->name(), m->result());
  return logs;
}

namespace {
void check_compiled(const Sequential::State& s, const char* what) {
  LS_CHECK(s.optimizer && s.loss, RuntimeError, "you must call compile() with an optimizer and a loss before ", what,
           "()");
}
}  // namespace

std::map<std::string, double> Sequential::train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  check_compiled(*s_, "fit");
  std::vector<Variable> vars = trainable_variables();
  Tensor y_pred, loss;
  std::vector<Tensor> grads;
  {
    GradientTape tape;
    y_pred = (*this)(x, {.training = true});
    loss = (*s_->loss)(y, y_pred, sample_weight);
    std::vector<Tensor> reg = losses();
    if (!reg.empty()) loss = loss + add_n(reg);
    grads = tape.gradient(loss, vars);
  }
  s_->optimizer->apply_gradients(grads, vars);
  const double value = loss.item<double>();
  s_->loss_total += value * static_cast<double>(x.dim(0));
  s_->loss_count += static_cast<double>(x.dim(0));
  NoGradGuard no_grad;
  for (auto& m : s_->metrics) m->update_state(y, y_pred, sample_weight);
  std::map<std::string, double> out{{"loss", value}};
  for (auto& m : s_->metrics) out[m->name()] = m->result();
  return out;
}

void Sequential::test_step(const data::Element& batch) {
  NoGradGuard no_grad;
  Tensor y_pred = (*this)(batch.x, {.training = false});
  Tensor loss = (*s_->loss)(batch.y, y_pred, batch.sample_weight);
  std::vector<Tensor> reg = losses();
  if (!reg.empty()) loss = loss + add_n(reg);
  s_->loss_total += loss.item<double>() * static_cast<double>(batch.x.dim(0));
  s_->loss_count += static_cast<double>(batch.x.dim(0));
  for (auto& m : s_->metrics) m->update_state(batch.y, y_pred, batch.sample_weight);
}

std::map<std::string, double> Sequential::test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  check_compiled(*s_, "evaluate");
  reset_metrics();
  test_step({x, y, sample_weight});
  return to_map(metric_logs());
}

callbacks::History Sequential::fit(const data::Dataset& dataset, FitOptions opt) {
  check_compiled(*s_, "fit");
  LS_CHECK(opt.epochs >= 1 && opt.initial_epoch >= 0, ValueError, "fit() needs epochs >= 1 and initial_epoch >= 0, got ",
           opt.epochs, " and ", opt.initial_epoch);
  const bool fixed_steps = opt.steps_per_epoch > 0;
  RunParams params{opt.epochs, steps_for(dataset, opt.steps_per_epoch, "fit()"), opt.verbose};
  auto history = std::make_shared<callbacks::History>();
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, history);
  s_->stop_training = false;

  Logs none;
  cbs.each([&](Callback& c) { c.on_train_begin(none); });
  // With steps_per_epoch the iterator runs on across epochs (Keras); otherwise each epoch is one pass, whose
  // shuffle order depends on the epoch number only, so a resumed run sees the same order as an unbroken one.
  data::Iterator it = dataset.make_iterator(fixed_steps ? 0 : static_cast<uint64_t>(opt.initial_epoch));
  for (int64_t epoch = opt.initial_epoch; epoch < opt.epochs && !s_->stop_training; ++epoch) {
    reset_metrics();
    cbs.each([&](Callback& c) { c.on_epoch_begin(epoch, none); });
    if (!fixed_steps && epoch > opt.initial_epoch) it = dataset.make_iterator(static_cast<uint64_t>(epoch));
    int64_t step = 0;
    for (; !fixed_steps || step < opt.steps_per_epoch; ++step) {
      std::optional<data::Element> batch = it.next();
      if (!batch) {
        if (fixed_steps) {
          log(LogLevel::warning, "your input ran out of data after ", step, " steps of epoch ", epoch + 1,
              ": make sure the dataset can produce steps_per_epoch * epochs batches (use repeat()); training stops");
          s_->stop_training = true;
        }
        break;
      }
      cbs.each([&](Callback& c) { c.on_train_batch_begin(step, none); });
      train_on_batch(batch->x, batch->y, batch->sample_weight);
      Logs logs = metric_logs();
      cbs.each([&](Callback& c) { c.on_train_batch_end(step, logs); });
      if (s_->stop_training) break;
    }
    Logs epoch_logs = metric_logs();
    if (opt.validation_data) {
      Logs val = run_evaluation(*opt.validation_data, opt.validation_steps, cbs.all);
      for (const auto& [k, v] : val.items()) epoch_logs.set("val_" + k, v);
    }
    cbs.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  cbs.each([&](Callback& c) { c.on_train_end(none); });
  return *history;
}

callbacks::History Sequential::fit(const Tensor& x, const Tensor& y, FitOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "batch_size must be >= 1, got ", opt.batch_size);
  data::Dataset ds = data::Dataset::from_tensor_slices(x, y);
  if (opt.shuffle) ds = ds.shuffle(x.dim(0), utils::next_generator().next_u32());
  return fit(ds.batch(opt.batch_size), std::move(opt));
}

Logs Sequential::run_evaluation(const data::Dataset& dataset, int64_t steps, const std::vector<CallbackPtr>& callbacks) {
  steps_for(dataset, steps, "evaluate()");
  CallbackList cbs{callbacks};
  reset_metrics();
  Logs none;
  cbs.each([&](Callback& c) { c.on_test_begin(none); });
  data::Iterator it = dataset.make_iterator();
  for (int64_t step = 0; steps <= 0 || step < steps; ++step) {
    std::optional<data::Element> batch = it.next();
    if (!batch) break;
    cbs.each([&](Callback& c) { c.on_test_batch_begin(step, none); });
    test_step(*batch);
    Logs logs = metric_logs();
    cbs.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  Logs logs = metric_logs();
  cbs.each([&](Callback& c) { c.on_test_end(logs); });
  return logs;
}

std::map<std::string, double> Sequential::evaluate(const data::Dataset& dataset, EvaluateOptions opt) {
  check_compiled(*s_, "evaluate");
  RunParams params{1, steps_for(dataset, opt.steps, "evaluate()"), opt.verbose};
  CallbackList cbs = make_callbacks(this, std::move(opt.callbacks), params, nullptr);
  return to_map(run_evaluation(dataset, opt.steps, cbs.all));
}

std::map<std::string, double> Sequential::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "batch_size must be >= 1, got ", opt.batch_size);
  return evaluate(data::Dataset::from_tensor_slices(x, y).batch(opt.batch_size), std::move(opt));
}

Tensor Sequential::predict(const data::Dataset& dataset, PredictOptions opt) {
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
  LS_CHECK(!outputs.empty(), ValueError, "predict() got no data: the dataset is empty");
  return raw_ops::concat(outputs, 0);
}

Tensor Sequential::predict(const Tensor& x, PredictOptions opt) {
  LS_CHECK(opt.batch_size >= 1, ValueError, "batch_size must be >= 1, got ", opt.batch_size);
  return predict(data::Dataset::from_tensor_slices(x).batch(opt.batch_size), std::move(opt));
}

}  // namespace lockstep::keras
