// tf.distribute for lockstep._lockstep.distribute: strategies, TF_CONFIG, distributed datasets and the replica
// context, over lockstep/distribute/strategy/strategy.h. Replicas run on the strategy's C++ threads and take the
// GIL only while they run Python; every call that computes, or waits on other replicas or workers, releases it.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "bindings.h"
#include "lockstep/core/failure_report.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::python {
namespace {

namespace d = lockstep::distribute;

// A Python strategy's C++ side. A multi-worker strategy's destructor waits for the other workers at the shutdown
// barrier, so the Python package destroys it at exit (shutdown()) instead of leaving it to the interpreter's
// teardown, which does not free what a program still holds; the default strategy is not ours to destroy.
struct PyStrategy {
  explicit PyStrategy(std::shared_ptr<d::Strategy> s) : strategy(std::move(s)) {}
  PyStrategy(PyStrategy&&) = default;
  std::shared_ptr<d::Strategy> strategy;

  d::Strategy& get() const {
    LS_CHECK(strategy != nullptr, RuntimeError, "the strategy was shut down at exit: make a new one");
    return *strategy;
  }
  void shutdown() {
    std::shared_ptr<d::Strategy> s = std::move(strategy);
    nb::gil_scoped_release unlocked;  // waits for the other workers, who need nothing from this interpreter
    s.reset();
  }
  ~PyStrategy() {
    if (strategy && strategy->num_workers() > 1) shutdown();
  }
};

// strategy.scope(): the C++ scope lives from __enter__ to __exit__, on the thread that entered it.
struct PyScope {
  std::unique_ptr<d::Strategy::Scope> scope;
  void exit() { scope.reset(); }
};

PyStrategy make_strategy(const std::function<std::shared_ptr<d::Strategy>()>& make) {
  std::shared_ptr<d::Strategy> s;
  {
    nb::gil_scoped_release unlocked;  // a multi-worker strategy waits here for every worker to join
    s = make();
  }
  return PyStrategy(std::move(s));
}

// The resolver a MultiWorkerMirroredStrategy gets: an explicit cluster when the program gave one, else the
// TF_CONFIG text it gave, else what the environment says (TF_CONFIG, MPI, SLURM or one local worker).
std::unique_ptr<d::ClusterResolver> make_resolver(
    const std::optional<std::string>& tf_config,
    const std::optional<std::map<std::string, std::vector<std::string>>>& spec,
    const std::optional<std::string>& task_type, int task_id) {
  if (spec)
    return std::make_unique<d::SimpleClusterResolver>(d::ClusterSpec(*spec), task_type.value_or("worker"), task_id);
  if (tf_config) return std::make_unique<d::TFConfigClusterResolver>(*tf_config);
  return d::resolve_cluster();
}

d::PerReplica<Tensor> per_replica(const std::vector<nb::object>& values) {
  d::PerReplica<Tensor> out;
  for (nb::handle v : values) out.values.push_back(to_tensor(v));
  return out;
}

// ReplicaContext.all_reduce: every tensor summed over every replica of every worker, in one float64 collective.
std::vector<Tensor> all_reduce_sum(d::Strategy& s, const std::vector<nb::object>& values) {
  std::vector<Tensor> tensors;
  for (nb::handle v : values) tensors.push_back(to_tensor(v));
  nb::gil_scoped_release unlocked;  // the other replicas need the GIL to reach this collective
  std::vector<double> flat;
  for (const Tensor& t : tensors) {
    std::vector<double> v = raw_ops::cast(t, DType::float64).contiguous().to_vector<double>();
    flat.insert(flat.end(), v.begin(), v.end());
  }
  s.all_reduce_sum(flat);
  std::vector<Tensor> out;
  size_t at = 0;
  for (const Tensor& t : tensors) {
    const size_t n = static_cast<size_t>(t.numel());
    std::vector<double> part(flat.begin() + static_cast<std::ptrdiff_t>(at),
                             flat.begin() + static_cast<std::ptrdiff_t>(at + n));
    out.push_back(raw_ops::cast(from_vector(part, t.shape()), t.dtype()));
    at += n;
  }
  return out;
}

// An iterator of a distributed dataset; only ever moved (the class holds move-only data iterators, which
// nanobind's copy check cannot see through).
struct PyDistributedIterator {
  explicit PyDistributedIterator(d::DistributedDataset::Iterator i) : it(std::move(i)) {}
  PyDistributedIterator(const PyDistributedIterator&) = delete;
  d::DistributedDataset::Iterator it;
};

void bind_cluster(nb::module_& m) {
  // The C++ side's reading of a TF_CONFIG text, with its checks and one-line errors:
  // (cluster dict, task type or None, task id, rpc layer, environment).
  m.def("_parse_tf_config", [](const std::string& text) {
    d::TFConfigClusterResolver r(text);
    return nb::make_tuple(r.cluster_spec().jobs(), r.task_type(), r.task_id(), r.rpc_layer(), r.environment());
  });
  // The C++ side's reading of srun's environment: (cluster dict, task id).
  m.def("_parse_slurm", [](int port_base) {
    d::SlurmClusterResolver r(port_base);
    return nb::make_tuple(r.cluster_spec().jobs(), r.task_id());
  });
}

void bind_input(nb::module_& m) {
  nb::class_<d::InputContext>(m, "InputContext")
      .def(
          "__init__",
          [](d::InputContext* self, int num_input_pipelines, int input_pipeline_id, int num_replicas_in_sync) {
            new (self) d::InputContext{num_input_pipelines, input_pipeline_id, num_replicas_in_sync};
          },
          nb::arg("num_input_pipelines") = 1, nb::arg("input_pipeline_id") = 0, nb::arg("num_replicas_in_sync") = 1)
      .def_ro("num_input_pipelines", &d::InputContext::num_input_pipelines)
      .def_ro("input_pipeline_id", &d::InputContext::input_pipeline_id)
      .def_ro("num_replicas_in_sync", &d::InputContext::num_replicas_in_sync)
      .def("get_per_replica_batch_size", &d::InputContext::get_per_replica_batch_size, nb::arg("global_batch_size"))
      .def("__repr__", [](const d::InputContext& c) {
        return make_message("tf.distribute.InputContext(num_input_pipelines=", c.num_input_pipelines,
                            ", input_pipeline_id=", c.input_pipeline_id,
                            ", num_replicas_in_sync=", c.num_replicas_in_sync, ")");
      });

  nb::class_<PyDistributedIterator>(m, "_DistributedIterator")
      // The next per-replica elements, or None once any replica on any worker has run out.
      .def("next",
           [](PyDistributedIterator& self) -> nb::object {
             std::optional<d::PerReplica<data::Batch>> batch;
             {
               nb::gil_scoped_release unlocked;  // pipelines may run Python map functions; workers agree on the end
               batch = self.it.next();
             }
             if (!batch) return nb::none();
             nb::list out;
             for (const data::Batch& b : batch->values) out.append(element_to_python(b));
             return out;
           })
      .def("_save_state", [](const PyDistributedIterator& self) { return self.it.save_state().dump(); })
      .def("_restore_state", [](PyDistributedIterator& self, const std::string& state) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(state);
        } catch (const nlohmann::json::exception& e) {
          throw ValueError(make_message("saved distributed input state is not JSON (", e.what(), ")"));
        }
        self.it.restore_state(j);
      });

  nb::class_<d::DistributedDataset>(m, "DistributedDataset")
      .def(
          "_iterator",
          [](const d::DistributedDataset& ds, std::optional<uint64_t> iteration) {
            return new PyDistributedIterator(iteration ? ds.make_iterator(*iteration) : ds.begin());
          },
          nb::arg("iteration").none() = nb::none(), nb::keep_alive<0, 1>())
      .def_prop_ro("_num_replicas", [](const d::DistributedDataset& ds) { return ds.per_replica_datasets().size(); });

}

void bind_strategy(nb::module_& m) {
  nb::enum_<d::ReduceOp>(m, "_ReduceOp").value("SUM", d::ReduceOp::SUM).value("MEAN", d::ReduceOp::MEAN);
  nb::enum_<d::CommunicationImplementation>(m, "_CommunicationImplementation")
      .value("AUTO", d::CommunicationImplementation::AUTO)
      .value("RING", d::CommunicationImplementation::RING)
      .value("NCCL", d::CommunicationImplementation::NCCL)
      .value("MPI", d::CommunicationImplementation::MPI);
  nb::class_<d::CommunicationOptions>(m, "_CommunicationOptions")
      .def(nb::init<>())
      .def_rw("implementation", &d::CommunicationOptions::implementation)
      .def_rw("bytes_per_pack", &d::CommunicationOptions::bytes_per_pack)
      .def_rw("timeout_seconds", &d::CommunicationOptions::timeout_seconds);

  nb::class_<PyScope>(m, "_Scope").def("exit", &PyScope::exit);

  nb::class_<PyStrategy>(m, "_Strategy")
      .def_prop_ro("_id", [](const PyStrategy& s) { return reinterpret_cast<uintptr_t>(&s.get()); })
      .def_prop_ro("num_replicas_in_sync", [](const PyStrategy& s) { return s.get().num_replicas_in_sync(); })
      .def_prop_ro("num_local_replicas", [](const PyStrategy& s) { return s.get().num_local_replicas(); })
      .def_prop_ro("num_workers", [](const PyStrategy& s) { return s.get().num_workers(); })
      .def_prop_ro("worker_rank", [](const PyStrategy& s) { return s.get().worker_rank(); })
      .def_prop_ro("is_chief", [](const PyStrategy& s) { return s.get().is_chief(); })
      .def_prop_ro("task_type", [](const PyStrategy& s) { return s.get().cluster_resolver().task_type(); })
      .def_prop_ro("task_id", [](const PyStrategy& s) { return s.get().cluster_resolver().task_id(); })
      .def_prop_ro("rpc_layer", [](const PyStrategy& s) { return s.get().cluster_resolver().rpc_layer(); })
      .def_prop_ro("cluster_spec", [](const PyStrategy& s) { return s.get().cluster_resolver().cluster_spec().jobs(); })
      .def("shutdown", &PyStrategy::shutdown)
      .def("abort",
           [](PyStrategy& s, const std::string& message) {
             if (s.strategy) s.strategy->abort(message);
           })
      .def("enter_scope", [](PyStrategy& s) { return PyScope{std::make_unique<d::Strategy::Scope>(&s.get())}; })
      // fn(replica_id) on every local replica's thread; a Python exception stops the other replicas and the
      // caller sees a RuntimeError naming it (the Python side raises the original).
      .def("run",
           [](PyStrategy& self, nb::callable fn) {
             d::Strategy& s = self.get();
             nb::gil_scoped_release unlocked;
             s.run([&] {
               const int replica = d::replica_id_in_sync_group();
               nb::gil_scoped_acquire gil;
               try {
                 fn(replica);
               } catch (nb::python_error& e) {
                 const std::string type = nb::cast<std::string>(e.type().attr("__name__"));
                 const std::string what = nb::cast<std::string>(nb::str(e.value()));
                 throw RuntimeError(type + (what.empty() ? "" : ": " + what));
               }
             });
           })
      .def(
          "reduce",
          [](PyStrategy& self, d::ReduceOp op, const std::vector<nb::object>& values, std::optional<int64_t> axis) {
            d::PerReplica<Tensor> v = per_replica(values);
            nb::gil_scoped_release unlocked;
            return self.get().reduce(op, v, axis);
          },
          nb::arg("op"), nb::arg("values"), nb::arg("axis").none())
      .def("gather",
           [](PyStrategy& self, const std::vector<nb::object>& values, int64_t axis) {
             d::PerReplica<Tensor> v = per_replica(values);
             nb::gil_scoped_release unlocked;
             return self.get().gather(v, axis);
           })
      .def("all_reduce_sum",
           [](PyStrategy& self, const std::vector<nb::object>& values) { return all_reduce_sum(self.get(), values); })
      // From inside run: fn() once per worker, on replica 0 after every local replica has arrived; the others
      // wait until it is done.
      .def("merge_call",
           [](PyStrategy& self, nb::callable fn) {
             d::Strategy& s = self.get();
             nb::gil_scoped_release unlocked;
             s.merge_call([&] {
               nb::gil_scoped_acquire gil;
               fn();
             });
           })
      // From inside run: the gradients of mirrored variables summed over every replica, through the buckets their
      // gradient hooks filled during backward (what an optimizer's apply_gradients does first).
      .def("all_reduce_gradients",
           [](PyStrategy& self, const std::vector<nb::object>& gradients, const std::vector<Variable>& variables) {
             std::vector<Tensor> grads;
             for (nb::handle g : gradients) grads.push_back(g.is_none() ? Tensor() : to_tensor(g));
             nb::gil_scoped_release unlocked;
             return self.get().all_reduce_gradients(grads, variables);
           })
      .def(
          "experimental_distribute_dataset",
          [](PyStrategy& self, const data::Dataset& dataset) {
            return self.get().experimental_distribute_dataset(dataset);
          },
          nb::keep_alive<0, 1>())
      // fn(InputContext) -> data::Dataset, called once on this thread with the GIL held.
      .def(
          "distribute_datasets_from_function",
          [](PyStrategy& self, nb::callable fn) {
            return self.get().distribute_datasets_from_function(
                [&](const d::InputContext& ctx) { return nb::cast<data::Dataset>(fn(ctx)); });
          },
          nb::keep_alive<0, 1>());

  m.def("_mirrored", [](std::vector<std::string> devices, const d::CommunicationOptions& options) {
    return make_strategy([&] { return std::make_shared<d::MirroredStrategy>(devices, options); });
  });
  m.def(
      "_multi_worker",
      [](const d::CommunicationOptions& options, std::optional<std::string> tf_config,
         std::optional<std::map<std::string, std::vector<std::string>>> spec, std::optional<std::string> task_type,
         int task_id) {
        return make_strategy([&] {
          return std::make_shared<d::MultiWorkerMirroredStrategy>(options,
                                                                  make_resolver(tf_config, spec, task_type, task_id));
        });
      },
      nb::arg("options"), nb::arg("tf_config").none(), nb::arg("spec").none(), nb::arg("task_type").none(),
      nb::arg("task_id"));
  // The default strategy (one replica, no communication), never destroyed.
  m.def("_default", [] {
    static d::Strategy* const s = &d::get_strategy();  // no scope is active when lockstep.distribute imports
    return PyStrategy(std::shared_ptr<d::Strategy>(s, [](d::Strategy*) {}));
  });
  m.def("_current_id", [] { return reinterpret_cast<uintptr_t>(&d::get_strategy()); });
  m.def("has_strategy", &d::has_strategy);
  m.def("in_replica_context", &d::in_replica_context);
  m.def("replica_id_in_sync_group", &d::replica_id_in_sync_group);
}

}  // namespace

void bind_distribute(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("distribute", "tf.distribute over lockstep's strategies");
  bind_cluster(m);
  bind_input(m);
  bind_strategy(m);
}

}  // namespace lockstep::python
