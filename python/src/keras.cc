// tf.keras for lockstep._lockstep.keras: layers, losses, metrics, optimizers and schedules made from Keras configs
// through the C++ registries, functional and Sequential models with compile/fit/evaluate/predict and saving,
// callbacks (Python subclasses of Callback through a trampoline) and the built-in data sets. Configs cross the
// boundary as JSON text; python/lockstep/keras turns Keras' keyword arguments into them. Training, evaluation and
// every computation run with the GIL released: replica threads and callbacks take it back to call Python.
#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdio>
#include <mutex>

#include "bindings.h"
#include "lockstep/autograd/tape.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/saving.h"
#include "lockstep/keras/utils.h"

namespace lockstep::python {
namespace {
// The classes here that nanobind sees have names no other binding file uses: nanobind tells C++ types apart by their
// type_info names, which two anonymous-namespace classes of one name in different files share.

using nlohmann::json;
namespace kl = keras::layers;
namespace km = keras::metrics;
namespace kls = keras::losses;
namespace ko = keras::optimizers;
namespace kc = keras::callbacks;

// Python's sys.stdout and C's stdout buffer separately: flushing one before the other writes keeps the progress bar
// (printed by C++) and a program's print() output in the order they happened, also when piped to a file.
void flush_python_stdout() {
  nb::object out = nb::module_::import_("sys").attr("stdout");
  if (!out.is_none()) out.attr("flush")();
}

// Runs `run` (a C++ training, evaluation or prediction) with the GIL released, between flushes of both streams.
template <typename F>
auto run_released(F&& run) {
  flush_python_stdout();
  struct FlushC {
    ~FlushC() { std::fflush(stdout); }
  } flush_c;
  nb::gil_scoped_release unlocked;
  return run();
}

// A Python function of (y_true, y_pred) as the per-example function of a loss or metric; it may run on any
// replica's thread.
std::function<Tensor(const Tensor&, const Tensor&)> python_function(nb::handle fn) {
  PyRef f(fn);
  return [f](const Tensor& y_true, const Tensor& y_pred) {
    nb::gil_scoped_acquire gil;
    return to_tensor(f.get()(y_true, y_pred));
  };
}

nb::dict to_dict(const keras::Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs.items()) d[k.c_str()] = v;
  return d;
}

Shape to_shape(const std::vector<std::optional<int64_t>>& dims) {
  std::vector<int64_t> out;
  for (const auto& d : dims) out.push_back(d.value_or(-1));
  return Shape(out);
}

std::vector<nb::object> numpy_list(const std::vector<Tensor>& ts) {
  std::vector<nb::object> out;
  for (const Tensor& t : ts) out.push_back(to_numpy(t));
  return out;
}

// A Tensor from Python, or an undefined one for None.
Tensor optional_tensor(nb::handle v) {
  return v.is_none() ? Tensor() : to_tensor(v);
}

// ---- callbacks ----

// The hooks of keras.callbacks.Callback, in the order KerasPyCallback numbers them.
constexpr std::array<const char*, 14> kHooks = {"on_train_begin",         "on_train_end",         "on_epoch_begin",
                                                "on_epoch_end",           "on_train_batch_begin", "on_train_batch_end",
                                                "on_test_begin",          "on_test_end",          "on_test_batch_begin",
                                                "on_test_batch_end",      "on_predict_begin",     "on_predict_end",
                                                "on_predict_batch_begin", "on_predict_batch_end"};
enum Hook {
  kTrainBegin,
  kTrainEnd,
  kEpochBegin,
  kEpochEnd,
  kTrainBatchBegin,
  kTrainBatchEnd,
  kTestBegin,
  kTestEnd,
  kTestBatchBegin,
  kTestBatchEnd,
  kPredictBegin,
  kPredictEnd,
  kPredictBatchBegin,
  kPredictBatchEnd
};

// A Python keras.callbacks.Callback as a C++ callback. Only the hooks the Python class overrides are called
// (`hooks`), so a callback with on_epoch_end alone costs nothing per batch; the *_begin hooks of a run first
// give it the run's params (Keras' callback.params).
class KerasPyCallback : public keras::Callback {
 public:
  KerasPyCallback(nb::handle callback, const std::vector<std::string>& hooks) : self_(callback) {
    for (const std::string& h : hooks)
      for (size_t i = 0; i < kHooks.size(); ++i)
        if (h == kHooks[i]) overridden_.set(i);
  }
  void on_train_begin(const keras::Logs& l) override { begin(kTrainBegin, l); }
  void on_train_end(const keras::Logs& l) override { call(kTrainEnd, std::nullopt, l); }
  void on_epoch_begin(int64_t e, const keras::Logs& l) override { call(kEpochBegin, e, l); }
  void on_epoch_end(int64_t e, const keras::Logs& l) override { call(kEpochEnd, e, l); }
  void on_train_batch_begin(int64_t b, const keras::Logs& l) override { call(kTrainBatchBegin, b, l); }
  void on_train_batch_end(int64_t b, const keras::Logs& l) override { call(kTrainBatchEnd, b, l); }
  void on_test_begin(const keras::Logs& l) override { begin(kTestBegin, l); }
  void on_test_end(const keras::Logs& l) override { call(kTestEnd, std::nullopt, l); }
  void on_test_batch_begin(int64_t b, const keras::Logs& l) override { call(kTestBatchBegin, b, l); }
  void on_test_batch_end(int64_t b, const keras::Logs& l) override { call(kTestBatchEnd, b, l); }
  void on_predict_begin(const keras::Logs& l) override { begin(kPredictBegin, l); }
  void on_predict_end(const keras::Logs& l) override { call(kPredictEnd, std::nullopt, l); }
  void on_predict_batch_begin(int64_t b, const keras::Logs& l) override { call(kPredictBatchBegin, b, l); }
  void on_predict_batch_end(int64_t b, const keras::Logs& l) override { call(kPredictBatchEnd, b, l); }

 private:
  void begin(Hook hook, const keras::Logs& logs) {
    {
      nb::gil_scoped_acquire gil;
      nb::dict params;
      params["verbose"] = params_.verbose;
      params["epochs"] = params_.epochs;
      params["steps"] = params_.steps < 0 ? nb::object(nb::none()) : nb::object(nb::int_(params_.steps));
      self_.get().attr("set_params")(params);
    }
    call(hook, std::nullopt, logs);
  }
  void call(Hook hook, std::optional<int64_t> index, const keras::Logs& logs) {
    if (!overridden_.test(hook)) return;
    std::fflush(stdout);
    nb::gil_scoped_acquire gil;
    nb::object method = self_.get().attr(kHooks[hook]);
    if (index)
      method(*index, to_dict(logs));
    else
      method(to_dict(logs));
    flush_python_stdout();
  }

  PyRef self_;
  std::bitset<kHooks.size()> overridden_;
};

void bind_callbacks(nb::module_& k) {
  nb::class_<keras::Callback>(k, "Callback");
  nb::module_ c = k.def_submodule("callbacks");
  c.def("PyCallback", [](nb::handle callback, const std::vector<std::string>& hooks) -> keras::CallbackPtr {
    return std::make_shared<KerasPyCallback>(callback, hooks);
  });
  c.def("LearningRateScheduler", [](nb::handle schedule, int verbose) {
    PyRef fn(schedule);
    return kc::LearningRateScheduler(
        [fn](int64_t epoch, double lr) {
          nb::gil_scoped_acquire gil;
          return nb::cast<double>(nb::float_(fn.get()(epoch, lr)));
        },
        verbose);
  });
}

// ---- layers ----

// A layer or model written in Python (a subclass of tf.keras.layers.Layer or tf.keras.Model) as a C++ layer: every
// such Python object has one, made by Layer.__init__, which holds the object weakly (the object owns it). What the
// object's attributes hold (lockstep's layers, other Python layers, Variables) and its add_weight and add_loss
// are tracked in C++ (Layer::track), so its weights, losses, random streams and trainable flag are the C++ layer's,
// as any layer's. Calls and builds run the object's Python code holding the GIL, recorded on the tape by the ops it
// calls. Two places call it from C++:
// - a functional model's node (a symbolic call), through held(): a copy that keeps the object alive, since the
//   graph may be all that holds it. Its first symbolic call builds it for all its inputs' shapes (_output_shape_for).
// - a subclassed model's own call() as the one layer of a C++ Sequential model, so that compile/fit/evaluate/
//   predict and the callbacks run it in the C++ loop; building it builds the model for the data's shape.
class PythonLayer : public keras::Layer {
 public:
  PythonLayer(nb::handle obj, const std::string& class_name, const std::string& name)
      : Layer(class_name, name), ref_(nb::steal(PyWeakref_NewRef(obj.ptr(), nullptr))) {}
  keras::LayerPtr clone() const override { return std::make_shared<PythonLayer>(*this); }
  // A copy sharing what this one tracks, holding the Python object strongly.
  keras::LayerPtr held() const {
    auto copy = std::make_shared<PythonLayer>(*this);
    copy->strong_ = PyRef(object());
    return copy;
  }

  Shape compute_output_shape(const Shape& input_shape) const override {
    nb::gil_scoped_acquire gil;
    return output_shape(with_batch(input_shape));
  }
  // (A functional model's node asks this also for a call on one tensor: that is a call on one tensor here.)
  Shape compute_output_shape_list(const std::vector<Shape>& input_shapes) const override {
    if (input_shapes.size() == 1) return compute_output_shape(input_shapes[0]);
    nb::gil_scoped_acquire gil;
    nb::list shapes;
    for (const Shape& s : input_shapes) shapes.append(with_batch(s));
    return output_shape(shapes);
  }
  nlohmann::json get_config() const override {
    throw ValueError(make_message("\"", name(), "\" is a Python subclass (", class_name(),
                                  "): lockstep cannot save its config in a model file; use save_weights"));
  }

 protected:
  void build(const Shape& input_shape) override {
    nb::gil_scoped_acquire gil;
    object().attr("_maybe_build")(with_batch(input_shape));
    weights();  // filled while the build holds the other replicas back
  }
  Tensor call(const Tensor& x, bool training) override {
    nb::gil_scoped_acquire gil;
    return to_tensor(object()(x, nb::arg("training") = training));
  }
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override {
    nb::gil_scoped_acquire gil;
    nb::list inputs;
    for (const Tensor& x : xs) inputs.append(nb::cast(x));
    return to_tensor(object()(inputs, nb::arg("training") = training));
  }

 private:
  static nb::tuple with_batch(const Shape& shape) {
    nb::list dims;
    dims.append(nb::none());
    for (int64_t d : shape.dims()) dims.append(d < 0 ? nb::none() : nb::int_(d));
    return nb::tuple(dims);
  }
  Shape output_shape(nb::handle input_shape) const {
    return Shape(nb::cast<std::vector<int64_t>>(object().attr("_output_shape_for")(input_shape)));
  }
  nb::object object() const {
    nb::handle obj(PyWeakref_GetObject(ref_.get().ptr()));
    LS_CHECK(!obj.is_none(), RuntimeError, "the Python object of layer '", name(), "' no longer exists");
    return nb::borrow(obj);
  }
  PyRef ref_;     // the weak reference
  PyRef strong_;  // held(): the object itself
};

// A regularizer written in Python (a function of the weight) given to a Python layer's add_weight: called holding
// the GIL.
class PythonRegularizer final : public keras::regularizers::Regularizer {
 public:
  explicit PythonRegularizer(nb::handle fn) : fn_(nb::borrow(fn)) {}
  Tensor operator()(const Tensor& w) const override {
    nb::gil_scoped_acquire gil;
    return to_tensor(fn_.get()(w));
  }
  nlohmann::json get_config() const override {
    throw ValueError("a Python layer's regularizer has no config lockstep can save; use save_weights");
  }

 private:
  PyRef fn_;
};

void bind_layers(nb::module_& k) {
  nb::class_<distribute::ReplicaRandom>(k, "ReplicaRandom",
                                        "A random layer's per-replica Philox streams (what checkpoints save of it).");
  nb::class_<keras::KerasTensor>(k, "KerasTensor")
      .def_prop_ro("shape", [](const keras::KerasTensor& t) { return t.shape().dims(); })
      .def_prop_ro("dtype", &keras::KerasTensor::dtype);

  nb::class_<keras::Layer>(k, "Layer")
      .def_prop_ro("name", &keras::Layer::name)
      .def_prop_ro("class_name", &keras::Layer::class_name)
      .def_prop_ro("built", &keras::Layer::built)
      .def_prop_rw("trainable", &keras::Layer::trainable, &keras::Layer::set_trainable)
      .def_prop_ro("dtype_policy", [](const keras::Layer& l) { return l.dtype_policy().name(); })
      .def("_id", [](const keras::Layer& l) { return reinterpret_cast<uintptr_t>(&l); })
      .def("get_config", [](const keras::Layer& l) { return l.get_config().dump(); })
      .def("weights", [](const keras::Layer& l) { return l.weights(); })
      .def("trainable_weights", &keras::Layer::trainable_weights)
      .def("non_trainable_weights", &keras::Layer::non_trainable_weights)
      .def("losses", &keras::Layer::losses)
      .def("_random_streams", &keras::Layer::random_streams)
      .def("sublayers", &keras::Layer::sublayers)
      .def("track", nb::overload_cast<keras::LayerPtr>(&keras::Layer::track))
      // add_weight's and Variable attributes' weights, with add_weight's regularizer: one of tf.keras.regularizers
      // becomes the C++ regularizer of its config; any other callable is run by Python.
      .def(
          "track_weight",
          [](keras::Layer& l, const Variable& v, nb::handle regularizer) {
            keras::regularizers::RegularizerPtr r;
            if (nb::hasattr(regularizer, "_keras_serialized")) {
              nb::object config = nb::module_::import_("json").attr("dumps")(regularizer.attr("_keras_serialized")());
              r = keras::regularizers::from_config(json::parse(nb::cast<std::string>(config)));
            } else if (!regularizer.is_none()) {
              r = std::make_shared<PythonRegularizer>(regularizer);
            }
            l.track(v, std::move(r));
          },
          nb::arg("weight"), nb::arg("regularizer").none())
      .def("add_call_loss", [](keras::Layer& l, nb::handle loss) { l.add_call_loss(to_tensor(loss)); })
      .def("clear_call_losses", &keras::Layer::clear_call_losses)
      .def("count_params", &keras::Layer::count_params)
      .def("build",
           [](keras::Layer& l, const std::vector<std::optional<int64_t>>& shape) {
             Shape s = to_shape(shape);
             nb::gil_scoped_release unlocked;
             l.ensure_built(s);
           })
      .def("compute_output_shape",
           [](const keras::Layer& l, const std::vector<std::optional<int64_t>>& shape) {
             return l.compute_output_shape(to_shape(shape)).dims();
           })
      .def("call",
           [](keras::Layer& l, nb::handle x, bool training) {
             Tensor t = to_tensor(x);
             nb::gil_scoped_release unlocked;
             return l(t, {.training = training});
           })
      .def("call_list",
           [](keras::Layer& l, const std::vector<nb::object>& xs, bool training) {
             std::vector<Tensor> ts;
             for (nb::handle x : xs) ts.push_back(to_tensor(x));
             nb::gil_scoped_release unlocked;
             return l(ts, {.training = training});
           })
      .def(
          "call_symbolic",
          [](keras::Layer& l, const keras::KerasTensor& x, std::optional<bool> training) { return l(x, training); },
          nb::arg("x"), nb::arg("training") = nb::none())
      .def(
          "call_symbolic_list",
          [](keras::Layer& l, const std::vector<keras::KerasTensor>& xs, std::optional<bool> training) {
            return l(xs, training);
          },
          nb::arg("xs"), nb::arg("training") = nb::none());
  nb::class_<PythonLayer, keras::Layer>(k, "PythonLayer",
                                        "The C++ layer of a Layer or Model subclass written in Python.")
      .def("held", &PythonLayer::held);

  nb::module_ layers = k.def_submodule("layers");
  layers.def("names", [] { return kl::registry().names(); });
  layers.def("adapt", [](const keras::LayerPtr& layer, nb::handle data) {
    auto normalization = std::dynamic_pointer_cast<kl::Normalization>(layer);
    LS_CHECK(normalization, ValueError, "layer \"", layer->name(), "\" has no adapt(): only Normalization does");
    Tensor t = to_tensor(data);
    nb::gil_scoped_release unlocked;
    normalization->adapt(t);
  });
  layers.def("python_layer", [](nb::handle layer, const std::string& class_name, const std::string& name) {
    return std::make_shared<PythonLayer>(layer, class_name, name);
  });
  layers.def("from_config", [](const std::string& class_name, const std::string& config) {
    return kl::from_config({{"class_name", class_name}, {"config", json::parse(config)}});
  });
  // keras.Input: the InputLayer and the symbolic tensor standing for it.
  layers.def("Input", [](const std::vector<std::optional<int64_t>>& shape, nb::handle dtype, const std::string& name) {
    auto input = std::make_shared<kl::InputLayer>(to_shape(shape), to_dtype(dtype), name);
    return std::make_pair(keras::LayerPtr(input), keras::KerasTensor(*input));
  });
  layers.def("input_of", [](const keras::LayerPtr& layer) {
    auto input = std::dynamic_pointer_cast<kl::InputLayer>(layer);
    LS_CHECK(input, ValueError, "layer '", layer->name(), "' is not an InputLayer");
    return keras::KerasTensor(*input);
  });
}

// ---- losses, metrics, optimizers ----

kls::Reduction reduction_from_name(const std::string& name) {
  for (kls::Reduction r :
       {kls::Reduction::AUTO, kls::Reduction::NONE, kls::Reduction::SUM, kls::Reduction::SUM_OVER_BATCH_SIZE})
    if (kls::reduction_name(r) == name) return r;
  throw ValueError(make_message("Invalid value for argument `reduction`: '", name,
                                "'. Use 'sum_over_batch_size', 'sum', 'none' or None"));
}

void bind_losses(nb::module_& k) {
  nb::module_ l = k.def_submodule("losses");
  nb::class_<kls::Loss>(l, "Loss")
      .def(
          "__call__",
          [](const kls::Loss& loss, nb::handle y_true, nb::handle y_pred, nb::handle sample_weight) {
            Tensor p = to_tensor(y_pred), t = to_tensor(y_true), w = optional_tensor(sample_weight);
            nb::gil_scoped_release unlocked;
            return loss(t, p, w);
          },
          nb::arg("y_true"), nb::arg("y_pred"), nb::arg("sample_weight").none() = nb::none())
      .def("call",
           [](const kls::Loss& loss, nb::handle y_true, nb::handle y_pred) {
             Tensor p = to_tensor(y_pred), t = to_tensor(y_true);
             nb::gil_scoped_release unlocked;
             return loss.call(t, p);
           })
      .def_prop_ro("name", &kls::Loss::name)
      .def_prop_ro("reduction", [](const kls::Loss& loss) { return kls::reduction_name(loss.reduction()); })
      .def_prop_ro("class_name", &kls::Loss::class_name)
      .def("get_config", [](const kls::Loss& loss) { return loss.get_config().dump(); });
  l.def("names", [] { return kls::registry().names(); });
  l.def("from_config", [](const std::string& class_name, const std::string& config) {
    return kls::registry().from_config(class_name, json::parse(config));
  });
  l.def("get", [](const std::string& name) { return kls::get(name); });
  l.def("from_function", [](nb::handle fn, const std::string& reduction, const std::string& name) {
    return std::shared_ptr<kls::Loss>(
        std::make_shared<kls::LossFunctionWrapper>(python_function(fn), reduction_from_name(reduction), name));
  });
}

void bind_metrics(nb::module_& k) {
  nb::module_ m = k.def_submodule("metrics");
  nb::class_<km::Metric>(m, "Metric")
      .def(
          "update_state",
          [](km::Metric& metric, nb::handle y_true, nb::handle y_pred, nb::handle sample_weight) {
            Tensor p = to_tensor(y_pred), t = to_tensor(y_true), w = optional_tensor(sample_weight);
            nb::gil_scoped_release unlocked;
            metric.update_state(t, p, w);
          },
          nb::arg("y_true"), nb::arg("y_pred"), nb::arg("sample_weight").none() = nb::none())
      // Mean's and Sum's update_state(values, sample_weight).
      .def(
          "update_values",
          [](km::Metric& metric, nb::handle values, nb::handle sample_weight) {
            Tensor v = to_tensor(values), w = optional_tensor(sample_weight);
            nb::gil_scoped_release unlocked;
            if (auto* mean = dynamic_cast<km::MeanMetric*>(&metric))
              mean->update_state(v, w);
            else if (auto* sum = dynamic_cast<km::SumMetric*>(&metric))
              sum->update_state(v, w);
            else
              throw ValueError(make_message("metric '", metric.name(), "' (", metric.class_name(),
                                            ") takes (y_true, y_pred), not values"));
          },
          nb::arg("values"), nb::arg("sample_weight").none() = nb::none())
      .def("takes_values",
           [](km::Metric& metric) {
             return dynamic_cast<km::MeanMetric*>(&metric) || dynamic_cast<km::SumMetric*>(&metric);
           })
      .def("result",
           [](const km::Metric& metric) {
             nb::gil_scoped_release unlocked;  // a collective under MultiWorkerMirroredStrategy
             return metric.result();
           })
      .def("reset_state", &km::Metric::reset_state)
      .def_prop_ro("name", &km::Metric::name)
      .def_prop_ro("class_name", &km::Metric::class_name)
      .def("get_config", [](const km::Metric& metric) { return metric.get_config().dump(); })
      .def("_lockstep_trackable", [](const std::shared_ptr<km::Metric>& metric) { return km::make_trackable(metric); });
  m.def("names", [] { return km::registry().names(); });
  m.def("from_config", [](const std::string& class_name, const std::string& config) {
    return km::registry().from_config(class_name, json::parse(config));
  });
  m.def("from_function", [](nb::handle fn, const std::string& name) {
    return std::shared_ptr<km::Metric>(std::make_shared<km::MeanMetricWrapper>(python_function(fn), name));
  });
  auto per_sample = [&](const char* name, Tensor (*fn)(const Tensor&, const Tensor&)) {
    m.def(name, [fn](nb::handle y_true, nb::handle y_pred) {
      Tensor p = to_tensor(y_pred), t = to_tensor(y_true);
      nb::gil_scoped_release unlocked;
      return fn(t, p);
    });
  };
  per_sample("accuracy", &km::accuracy);
  per_sample("sparse_categorical_accuracy", &km::sparse_categorical_accuracy);
  per_sample("categorical_accuracy", &km::categorical_accuracy);
  m.def("binary_accuracy", [](nb::handle y_true, nb::handle y_pred, double threshold) {
    Tensor p = to_tensor(y_pred), t = to_tensor(y_true);
    nb::gil_scoped_release unlocked;
    return km::binary_accuracy(t, p, threshold);
  });
}

// A learning-rate schedule written in Python (a LearningRateSchedule subclass, or a function of the step) for a C++
// optimizer; the optimizer may ask for the rate on a replica's thread.
class KerasPySchedule : public ko::LearningRateSchedule {
 public:
  explicit KerasPySchedule(nb::handle schedule) : schedule_(schedule) {}
  double operator()(int64_t step) const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<double>(nb::float_(schedule_.get()(step)));
  }
  // The schedule's own get_config(), or {} when it has none (Keras' base class raises NotImplementedError).
  nlohmann::json get_config() const override {
    nb::gil_scoped_acquire gil;
    try {
      nb::object config = schedule_.get().attr("get_config")();
      return json::parse(nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(config)));
    } catch (const nb::python_error&) {
      return json::object();
    }
  }
  std::string class_name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::type_name(schedule_.get().type()));
  }

 private:
  PyRef schedule_;
};

void bind_optimizers(nb::module_& k) {
  nb::module_ o = k.def_submodule("optimizers");
  nb::class_<ko::Optimizer>(o, "Optimizer")
      .def("apply_gradients",
           [](ko::Optimizer& opt, const std::vector<nb::object>& gradients, const std::vector<Variable>& variables) {
             LS_CHECK(gradients.size() == variables.size(), ValueError, "apply_gradients got ", gradients.size(),
                      " gradients for ", variables.size(), " variables: pass zip(gradients, variables)");
             std::vector<Tensor> grads;
             for (size_t i = 0; i < gradients.size(); ++i)
               grads.push_back(gradients[i].is_none() ? Tensor() : to_tensor(gradients[i], variables[i].dtype()));
             nb::gil_scoped_release unlocked;  // an all-reduce with the other replicas inside strategy.run
             opt.apply_gradients(grads, variables);
           })
      .def("build", [](ko::Optimizer& opt, const std::vector<Variable>& variables) { opt.build(variables); })
      .def_prop_ro("iterations", &ko::Optimizer::iterations)
      .def_prop_rw("learning_rate", &ko::Optimizer::learning_rate,
                   [](ko::Optimizer& opt, double lr) { opt.set_learning_rate(lr); })
      .def("set_python_schedule",
           [](ko::Optimizer& opt, nb::handle schedule) {
             opt.set_learning_rate(ko::LearningRate(std::make_shared<KerasPySchedule>(schedule)));
           })
      .def_prop_ro("name", &ko::Optimizer::name)
      .def_prop_ro("class_name", &ko::Optimizer::class_name)
      .def("get_config", [](const ko::Optimizer& opt) { return opt.get_config().dump(); })
      .def("_id", [](const ko::Optimizer& opt) { return reinterpret_cast<uintptr_t>(&opt); })
      .def("_lockstep_trackable", [](const std::shared_ptr<ko::Optimizer>& opt) { return ko::make_trackable(opt); });
  o.def("names", [] { return ko::registry().names(); });
  o.def("from_config", [](const std::string& class_name, const std::string& config) {
    return ko::from_config({{"class_name", class_name}, {"config", json::parse(config)}});
  });

  nb::class_<ko::LearningRateSchedule>(o, "LearningRateSchedule")
      .def("__call__", [](const ko::LearningRateSchedule& s, int64_t step) { return s(step); })
      .def_prop_ro("class_name", &ko::LearningRateSchedule::class_name)
      .def("get_config", [](const ko::LearningRateSchedule& s) { return s.get_config().dump(); });
  o.def("schedule_from_config", [](const std::string& class_name, const std::string& config) {
    return ko::schedules::registry().from_config(class_name, json::parse(config));
  });
}

// ---- models ----

// The dataset object the data binding registered (lockstep.data's `._cpp`), or null.
const data::Dataset* as_dataset(nb::handle v) {
  return nb::isinstance<data::Dataset>(v) ? &nb::cast<const data::Dataset&>(v) : nullptr;
}
const distribute::DistributedDataset* as_distributed(nb::handle v) {
  return nb::isinstance<distribute::DistributedDataset>(v) ? &nb::cast<const distribute::DistributedDataset&>(v)
                                                           : nullptr;
}

// Keras' class_weight ({class: weight}); None for none.
std::map<int64_t, double> class_weights(nb::handle v) {
  std::map<int64_t, double> out;
  if (!v.is_none())
    for (auto [c, w] : nb::cast<nb::dict>(v)) out[nb::cast<int64_t>(nb::int_(c))] = nb::cast<double>(nb::float_(w));
  return out;
}

// Keras' keyword arguments of fit/evaluate/predict onto their options struct: a value given and not None is
// converted as Python's int(), float() or bool() would, None keeps the struct's default (the one default there is),
// and a name left over is a TypeError.
class KerasRunKwargs {
 public:
  KerasRunKwargs(const char* what, const nb::kwargs& kwargs) : what_(what), kwargs_(nb::dict(kwargs)) {}
  // The value of `name`, taken out; None when not given.
  nb::object take(const char* name) { return kwargs_.attr("pop")(name, nb::none()); }
  void get(const char* name, int64_t& field) {
    if (nb::object v = take(name); !v.is_none()) field = nb::cast<int64_t>(nb::int_(v));
  }
  void get(const char* name, int& field) {
    if (nb::object v = take(name); !v.is_none()) field = nb::cast<int>(nb::int_(v));
  }
  void get(const char* name, double& field) {
    if (nb::object v = take(name); !v.is_none()) field = nb::cast<double>(nb::float_(v));
  }
  void get(const char* name, bool& field) {
    if (nb::object v = take(name); !v.is_none()) field = PyObject_IsTrue(v.ptr()) == 1;
  }
  void get(const char* name, Tensor& field) {
    if (nb::object v = take(name); !v.is_none()) field = to_tensor(v);
  }
  void get(const char* name, std::vector<keras::CallbackPtr>& field) {
    if (nb::object v = take(name); !v.is_none()) field = nb::cast<std::vector<keras::CallbackPtr>>(v);
  }
  void get(const char* name, std::map<int64_t, double>& field) { field = class_weights(take(name)); }
  // validation_data: a dataset, or a tuple (x, y[, sample_weight]) of arrays.
  void get(const char* name, std::optional<keras::ValidationData>& field) {
    nb::object v = take(name);
    if (v.is_none()) return;
    LS_CHECK(!as_distributed(v), ValueError,
             "validation_data: pass the dataset itself, not experimental_distribute_dataset's result");
    if (const data::Dataset* ds = as_dataset(v)) {
      field = keras::ValidationData(*ds);
      return;
    }
    nb::tuple parts = nb::tuple(v);
    LS_CHECK(parts.size() == 2 || parts.size() == 3, ValueError,
             "validation_data must be (x_val, y_val), (x_val, y_val, val_sample_weight) or a dataset");
    field = keras::ValidationData(to_tensor(parts[0]), to_tensor(parts[1]),
                                  parts.size() == 3 ? optional_tensor(parts[2]) : Tensor());
  }
  // Every argument was one the run takes.
  void done() const {
    if (kwargs_.size() == 0) return;
    nb::object names = nb::str(", ").attr("join")(kwargs_);
    throw nb::type_error(
        make_message(what_, "() got unexpected keyword arguments: ", nb::cast<std::string>(names)).c_str());
  }

 private:
  const char* what_;
  nb::dict kwargs_;
};

keras::FitOptions fit_options(const nb::kwargs& kwargs) {
  KerasRunKwargs kw("fit", kwargs);
  keras::FitOptions o;
  kw.get("epochs", o.epochs);
  kw.get("steps_per_epoch", o.steps_per_epoch);
  kw.get("batch_size", o.batch_size);
  kw.get("shuffle", o.shuffle);
  kw.get("sample_weight", o.sample_weight);
  kw.get("class_weight", o.class_weight);
  kw.get("validation_split", o.validation_split);
  kw.get("validation_data", o.validation_data);
  kw.get("validation_steps", o.validation_steps);
  kw.get("validation_batch_size", o.validation_batch_size);
  kw.get("validation_freq", o.validation_freq);
  kw.get("callbacks", o.callbacks);
  kw.get("initial_epoch", o.initial_epoch);
  kw.get("verbose", o.verbose);
  kw.done();
  return o;
}

keras::EvaluateOptions evaluate_options(const nb::kwargs& kwargs) {
  KerasRunKwargs kw("evaluate", kwargs);
  keras::EvaluateOptions o;
  kw.get("steps", o.steps);
  kw.get("batch_size", o.batch_size);
  kw.get("sample_weight", o.sample_weight);
  kw.get("callbacks", o.callbacks);
  kw.get("verbose", o.verbose);
  kw.done();
  return o;
}

keras::PredictOptions predict_options(const nb::kwargs& kwargs) {
  KerasRunKwargs kw("predict", kwargs);
  keras::PredictOptions o;
  kw.get("steps", o.steps);
  kw.get("batch_size", o.batch_size);
  kw.get("callbacks", o.callbacks);
  kw.get("verbose", o.verbose);
  kw.done();
  return o;
}

// Keras' callback.params of a run, as a dict.
nb::dict params_dict(const keras::RunParams& p) {
  nb::dict params;
  params["verbose"] = p.verbose;
  params["epochs"] = p.epochs;
  params["steps"] = p.steps < 0 ? nb::object(nb::none()) : nb::object(nb::int_(p.steps));
  return params;
}

// Keeps the params fit gave its callbacks, for the History that Python fills afterwards.
class KerasParamsRecorder : public keras::Callback {
 public:
  void on_train_begin(const keras::Logs&) override { recorded = params_; }
  keras::RunParams recorded;
};

void bind_model(nb::module_& k) {
  nb::class_<keras::Model>(k, "Model")
      .def("__init__", [](keras::Model* self, const std::vector<keras::KerasTensor>& inputs,
                          const std::vector<keras::KerasTensor>& outputs,
                          const std::string& name) { new (self) keras::Model(inputs, outputs, name); })
      .def_prop_ro("name", &keras::Model::name)
      .def_prop_ro("layers", &keras::Model::layers)
      .def("get_layer", &keras::Model::get_layer)
      .def_prop_ro("built", &keras::Model::built)
      .def("input_shape", [](const keras::Model& m) { return m.input_shape().dims(); })
      .def("input_dtype", &keras::Model::input_dtype)
      .def("build",
           [](keras::Model& m, const std::vector<std::optional<int64_t>>& shape) {
             Shape s = to_shape(shape);
             nb::gil_scoped_release unlocked;
             m.build(s);
           })
      .def("summary_string", &keras::Model::summary_string)
      .def("count_params", &keras::Model::count_params)
      // What Python's Layer reads of any layer's C++ object (a model's is its layers'), by the Layer binding's names.
      .def("sublayers", &keras::Model::layers)
      .def("weights", &keras::Model::variables)
      .def("trainable_weights", &keras::Model::trainable_variables)
      .def("non_trainable_weights", &keras::Model::non_trainable_variables)
      .def("_random_streams", &keras::Model::random_streams)
      // A model is trainable while all its layers are; setting it sets theirs (and their sublayers').
      .def_prop_rw(
          "trainable",
          [](const keras::Model& m) {
            const auto& ls = m.layers();
            return std::all_of(ls.begin(), ls.end(), [](const keras::LayerPtr& l) { return l->trainable(); });
          },
          [](keras::Model& m, bool trainable) {
            for (const keras::LayerPtr& l : m.layers()) l->set_trainable(trainable);
          })
      .def("losses",
           [](const keras::Model& m) {
             nb::gil_scoped_release unlocked;
             return m.losses();
           })
      .def("get_weights", [](const keras::Model& m) { return numpy_list(m.get_weights()); })
      .def("set_weights",
           [](keras::Model& m, const std::vector<nb::object>& weights) {
             std::vector<Tensor> ts;
             for (nb::handle w : weights) ts.push_back(to_tensor(w));
             m.set_weights(ts);
           })
      .def("get_config", [](const keras::Model& m) { return m.get_config().dump(); })
      .def("to_json", &keras::Model::to_json)
      .def("save_weights",
           [](const keras::Model& m, const std::string& path) {
             nb::gil_scoped_release unlocked;  // a collective under a multi-worker strategy
             m.save_weights(path);
           })
      .def("load_weights",
           [](keras::Model& m, const std::string& path) {
             nb::gil_scoped_release unlocked;
             m.load_weights(path);
           })
      .def("save",
           [](const keras::Model& m, const std::string& path, bool include_optimizer) {
             nb::gil_scoped_release unlocked;
             m.save(path, {.include_optimizer = include_optimizer});
           })
      .def(
          "compile",
          [](keras::Model& m, const std::shared_ptr<ko::Optimizer>& optimizer, const std::shared_ptr<kls::Loss>& loss,
             const std::vector<nb::object>& metrics) {
            keras::CompileOptions o{.optimizer = optimizer, .loss = loss};
            for (nb::handle metric : metrics) {
              if (nb::isinstance<nb::str>(metric))
                o.metrics.emplace_back(nb::cast<std::string>(metric));
              else
                o.metrics.emplace_back(nb::cast<std::shared_ptr<km::Metric>>(metric));
            }
            m.compile(std::move(o));
          },
          nb::arg("optimizer"), nb::arg("loss").none(), nb::arg("metrics"))
      // fit(x, y, **options) with Keras' keyword arguments (fit_options); x is arrays or a dataset (y None).
      // Returns (epochs, history, params).
      .def(
          "fit",
          [](keras::Model& m, nb::handle x, nb::handle y, const nb::kwargs& kwargs) {
            keras::FitOptions o = fit_options(kwargs);
            auto recorder = std::make_shared<KerasParamsRecorder>();
            o.callbacks.push_back(recorder);
            const data::Dataset* ds = as_dataset(x);
            const distribute::DistributedDataset* dist = as_distributed(x);
            Tensor tx = ds || dist ? Tensor() : to_tensor(x), ty = ds || dist ? Tensor() : to_tensor(y);
            kc::History history = run_released([&] {
              return ds ? m.fit(*ds, std::move(o)) : dist ? m.fit(*dist, std::move(o)) : m.fit(tx, ty, std::move(o));
            });
            return nb::make_tuple(nb::cast(history.epoch), nb::cast(history.history), params_dict(recorder->recorded));
          },
          nb::arg("x"), nb::arg("y").none(), nb::arg("kwargs"))
      .def(
          "evaluate",
          [](keras::Model& m, nb::handle x, nb::handle y, const nb::kwargs& kwargs) {
            keras::EvaluateOptions o = evaluate_options(kwargs);
            const distribute::DistributedDataset* dist = as_distributed(x);
            LS_CHECK(!dist || dist->source(), ValueError,
                     "evaluate() takes experimental_distribute_dataset's result or the dataset itself");
            const data::Dataset* ds = dist ? &*dist->source() : as_dataset(x);
            Tensor tx = ds ? Tensor() : to_tensor(x), ty = ds ? Tensor() : to_tensor(y);
            return run_released([&] { return ds ? m.evaluate(*ds, std::move(o)) : m.evaluate(tx, ty, std::move(o)); });
          },
          nb::arg("x"), nb::arg("y").none(), nb::arg("kwargs"))
      .def(
          "predict",
          [](keras::Model& m, nb::handle x, const nb::kwargs& kwargs) {
            keras::PredictOptions o = predict_options(kwargs);
            const distribute::DistributedDataset* dist = as_distributed(x);
            const data::Dataset* ds = dist && dist->source() ? &*dist->source() : as_dataset(x);
            Tensor t = ds ? Tensor() : to_tensor(x);
            Tensor out = run_released([&] { return ds ? m.predict(*ds, std::move(o)) : m.predict(t, std::move(o)); });
            return to_numpy(out);
          },
          nb::arg("x"), nb::arg("kwargs"))
      .def(
          "train_on_batch",
          [](keras::Model& m, nb::handle x, nb::handle y, nb::handle sample_weight, nb::handle class_weight) {
            Tensor tx = to_tensor(x), ty = to_tensor(y), w = optional_tensor(sample_weight);
            const std::map<int64_t, double> classes = class_weights(class_weight);
            nb::gil_scoped_release unlocked;
            return m.train_on_batch(tx, ty, w, classes);
          },
          nb::arg("x"), nb::arg("y"), nb::arg("sample_weight").none(), nb::arg("class_weight").none())
      .def(
          "test_on_batch",
          [](keras::Model& m, nb::handle x, nb::handle y, nb::handle sample_weight) {
            Tensor tx = to_tensor(x), ty = to_tensor(y), w = optional_tensor(sample_weight);
            nb::gil_scoped_release unlocked;
            return m.test_on_batch(tx, ty, w);
          },
          nb::arg("x"), nb::arg("y"), nb::arg("sample_weight").none())
      .def("call",
           [](keras::Model& m, nb::handle x, bool training) {
             Tensor t = to_tensor(x);
             nb::gil_scoped_release unlocked;
             return m(t, {.training = training});
           })
      .def("call_list",
           [](keras::Model& m, const std::vector<nb::object>& xs, bool training) {
             std::vector<Tensor> ts;
             for (nb::handle x : xs) ts.push_back(to_tensor(x));
             nb::gil_scoped_release unlocked;
             return m(ts, {.training = training});
           })
      .def_prop_rw("stop_training", &keras::Model::stop_training, &keras::Model::set_stop_training)
      .def_prop_ro("optimizer", &keras::Model::optimizer)
      .def_prop_ro("loss", &keras::Model::loss)
      .def_prop_ro("metrics", &keras::Model::metrics)
      .def("_lockstep_trackable", [](const keras::Model& m) { return keras::make_trackable(m); })
      .def("_random_streams", &keras::Model::random_streams);

  nb::class_<keras::Sequential, keras::Model>(k, "Sequential")
      .def("__init__",
           [](keras::Sequential* self, const std::vector<keras::LayerPtr>& layers, const std::string& name) {
             std::vector<keras::LayerHandle> handles(layers.begin(), layers.end());
             new (self) keras::Sequential(handles, name);
           })
      .def("add", [](keras::Sequential& s, const keras::LayerPtr& layer) { s.add(layer); });

  nb::module_ models = k.def_submodule("models");
  models.def("load_model", [](const std::string& path, bool compile) {
    nb::gil_scoped_release unlocked;  // a collective under a multi-worker strategy
    return keras::models::load_model(path, {.compile = compile});
  });
  models.def("model_from_json", &keras::models::model_from_json);
}

// ---- the rest: data sets, dtype policies, seeds ----

nb::tuple splits(const std::pair<datasets::Split, datasets::Split>& s) {
  return nb::make_tuple(nb::make_tuple(to_numpy(s.first.images), to_numpy(s.first.labels)),
                        nb::make_tuple(to_numpy(s.second.images), to_numpy(s.second.labels)));
}

void bind_utilities(nb::module_& k) {
  nb::module_ d = k.def_submodule("datasets");
  d.def("mnist", [] { return splits(datasets::mnist::load_data()); });
  d.def("fashion_mnist", [] { return splits(datasets::fashion_mnist::load_data()); });
  d.def("load_idx_directory", [](const std::string& dir) { return splits(datasets::load_idx_directory(dir)); });

  // Keras' utils.image_dataset_from_directory: [(dataset, class_names, file_paths)], two for subset="both".
  k.def(
      "image_dataset_from_directory",
      [](const std::string& directory, std::optional<std::string> labels, std::optional<std::string> label_mode,
         std::vector<std::string> class_names, std::string color_mode, std::optional<int64_t> batch_size,
         std::array<int64_t, 2> image_size, bool shuffle, std::optional<uint32_t> seed, double validation_split,
         std::optional<std::string> subset, std::string interpolation, bool follow_links, bool crop_to_aspect_ratio,
         bool verbose) {
        keras::utils::ImageDatasetOptions o{labels,
                                            label_mode,
                                            std::move(class_names),
                                            std::move(color_mode),
                                            batch_size,
                                            image_size,
                                            shuffle,
                                            seed,
                                            validation_split,
                                            subset,
                                            std::move(interpolation),
                                            follow_links,
                                            crop_to_aspect_ratio,
                                            verbose};
        std::vector<keras::utils::ImageDataset> out = run_released([&] {
          if (subset != "both") return std::vector{keras::utils::image_dataset_from_directory(directory, o)};
          auto [train, validation] = keras::utils::image_dataset_from_directory_both(directory, o);
          return std::vector{std::move(train), std::move(validation)};
        });
        nb::list result;
        for (const keras::utils::ImageDataset& d : out)
          result.append(nb::make_tuple(nb::cast(d.dataset), nb::cast(d.class_names), nb::cast(d.file_paths)));
        return result;
      },
      nb::arg("directory"), nb::arg("labels").none(), nb::arg("label_mode").none(), nb::arg("class_names"),
      nb::arg("color_mode"), nb::arg("batch_size").none(), nb::arg("image_size"), nb::arg("shuffle"),
      nb::arg("seed").none(), nb::arg("validation_split"), nb::arg("subset").none(), nb::arg("interpolation"),
      nb::arg("follow_links"), nb::arg("crop_to_aspect_ratio"), nb::arg("verbose"));

  k.def("set_global_policy", [](const std::string& name) { keras::mixed_precision::set_global_policy(name); });
  k.def("global_policy", [] { return keras::mixed_precision::global_policy().name(); });
  k.def("check_policy", [](const std::string& name) { return keras::mixed_precision::DTypePolicy(name).name(); });
  k.def("clear_session", &keras::clear_session);
  k.def("set_random_seed", &keras::utils::set_random_seed);
  k.def("activation_names", [] { return keras::activations::registry().names(); });
  k.def("activation", [](const std::string& name, nb::handle x) {
    keras::activations::Activation fn = keras::activations::get(name);
    Tensor t = to_tensor(x);
    nb::gil_scoped_release unlocked;
    return fn ? fn(t) : t;
  });
  k.def("regularizer", [](const std::string& config, nb::handle w) {
    keras::regularizers::RegularizerPtr r = keras::regularizers::from_config(json::parse(config));
    Tensor t = to_tensor(w);
    nb::gil_scoped_release unlocked;
    return (*r)(t);
  });
  k.def("initialize", [](const std::string& config, const std::vector<int64_t>& shape, nb::handle dtype) {
    return (*keras::initializers::from_config(json::parse(config)))(Shape(shape), to_dtype(dtype));
  });
  k.def("initializer_names", [] { return keras::initializers::registry().names(); });
  k.def("regularizer_names", [] { return keras::regularizers::registry().names(); });
}

}  // namespace

void bind_keras(nb::module_& m) {
  nb::module_ k = m.def_submodule("keras", "lockstep's Keras: layers, models, training, saving");
  bind_callbacks(k);
  bind_layers(k);
  bind_losses(k);
  bind_metrics(k);
  bind_optimizers(k);
  bind_model(k);
  bind_utilities(k);
}

}  // namespace lockstep::python
