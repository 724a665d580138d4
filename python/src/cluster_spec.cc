// tf.train.ClusterSpec as _lockstep.distribute.ClusterSpec: lockstep::distribute::ClusterSpec (its tasks, checks
// and errors) under TF's Python API, which takes a job's tasks as a list or as a dict {task index: address}.
#include <nanobind/operators.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"

namespace lockstep::python {
namespace {

namespace d = lockstep::distribute;

std::string type_error_text(const char* what, nb::handle value) {
  return make_message(what, " ", nb::cast<std::string>(nb::repr(value)), " must be bytes or unicode");
}

std::string text_of(nb::handle value, const char* what) {
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  if (nb::isinstance<nb::bytes>(value)) {
    auto b = nb::borrow<nb::bytes>(value);
    return {b.c_str(), b.size()};
  }
  throw nb::type_error(type_error_text(what, value).c_str());
}

int index_of(nb::handle key) {
  nb::object i = nb::steal(PyNumber_Long(key.ptr()));  // TF's int(i): "1" is task 1
  if (!i.is_valid()) throw nb::python_error();
  return nb::cast<int>(i);
}

// What TF's ClusterSpec takes: a ClusterSpec, or {job: [address, ...] | {task index: address}} (None: empty).
d::ClusterSpec spec_of(nb::handle cluster) {
  if (nb::isinstance<d::ClusterSpec>(cluster)) return nb::cast<d::ClusterSpec>(cluster);
  if (cluster.is_none()) return {};
  if (!nb::isinstance<nb::dict>(cluster))
    throw nb::type_error(
        "`cluster` must be a dictionary mapping one or more job names to (i) a list of network addresses, or (ii) a "
        "dictionary mapping integer task indices to network addresses; or a tf.train.ClusterSpec");
  std::map<std::string, std::map<int, std::string>> tasks;
  for (auto [job, value] : nb::borrow<nb::dict>(cluster)) {
    if (!nb::isinstance<nb::str>(job)) throw nb::type_error(type_error_text("Job name", job).c_str());
    std::map<int, std::string>& by_index = tasks[nb::cast<std::string>(job)];
    if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
      int i = 0;
      for (nb::handle address : value) by_index[i++] = text_of(address, "Task address");
    } else if (nb::isinstance<nb::dict>(value)) {
      for (auto [i, address] : nb::borrow<nb::dict>(value)) by_index[index_of(i)] = text_of(address, "Task address");
    } else {
      throw nb::type_error(make_message("The tasks for job ", nb::cast<std::string>(nb::repr(job)),
                                        " must be a list or a dictionary from integers to strings.")
                               .c_str());
    }
  }
  return d::ClusterSpec::sparse(std::move(tasks));
}

// TF's as_dict from the C++ one: a job's list, or {task index: address} for a sparse job.
nb::dict as_dict(const d::ClusterSpec& spec) {
  nb::dict out;
  const nlohmann::json jobs = spec.as_dict();  // items() of a temporary would outlive it
  for (const auto& [job, tasks] : jobs.items()) {
    if (tasks.is_array()) {
      out[job.c_str()] = nb::cast(tasks.get<std::vector<std::string>>());
      continue;
    }
    nb::dict by_index;
    for (const auto& [i, address] : tasks.items()) by_index[nb::int_(std::stoi(i))] = address.get<std::string>();
    out[job.c_str()] = by_index;
  }
  return out;
}

std::string repr(const d::ClusterSpec& spec) {
  return "ClusterSpec(" + nb::cast<std::string>(nb::repr(as_dict(spec))) + ")";
}

}  // namespace

void bind_cluster_spec(nb::module_& m) {
  nb::module_ distribute = m.def_submodule("distribute");
  nb::class_<d::ClusterSpec> cls(distribute, "ClusterSpec",
                                 "tf.train.ClusterSpec: job name -> task addresses, given as a list (the index is the "
                                 "position) or as a dict {task index: address}.");
  cls.def(
         "__init__", [](d::ClusterSpec* self, nb::handle cluster) { new (self) d::ClusterSpec(spec_of(cluster)); },
         nb::arg("cluster").none())
      .def("as_dict", &as_dict, "Each job's tasks: a list when their indices are 0..n-1, else {index: address}.")
      .def_prop_ro("jobs",
                   [](const d::ClusterSpec& s) {
                     std::vector<std::string> jobs;
                     for (const auto& [job, tasks] : s.tasks()) jobs.push_back(job);
                     return jobs;
                   })
      .def(
          "num_tasks", [](const d::ClusterSpec& s, const std::string& job) { return s.tasks(job).size(); },
          nb::arg("job_name"))
      .def(
          "task_indices",
          [](const d::ClusterSpec& s, const std::string& job) {
            std::vector<int> indices;
            for (const auto& [i, address] : s.tasks(job)) indices.push_back(i);
            return indices;
          },
          nb::arg("job_name"))
      .def("task_address", &d::ClusterSpec::task_address, nb::arg("job_name"), nb::arg("task_index"))
      .def(
          "job_tasks",
          [](const d::ClusterSpec& s, const std::string& job) {
            const std::map<int, std::string>& tasks = s.tasks(job);
            nb::list out;  // TF's: one entry per index up to the largest, None where a sparse job has no task
            for (int i = 0; !tasks.empty() && i <= tasks.rbegin()->first; ++i) {
              auto it = tasks.find(i);
              out.append(it == tasks.end() ? nb::none() : nb::cast(it->second));
            }
            return out;
          },
          nb::arg("job_name"))
      .def("_jobs", &d::ClusterSpec::jobs, "Each job's addresses in index order (what the C++ strategies take).")
      .def(nb::self == nb::self)
      .def(nb::self != nb::self)
      .def("__bool__", [](const d::ClusterSpec& s) { return !s.empty(); })
      .def("__repr__", &repr)
      .def("__str__", &repr)
      .def("__copy__", [](const d::ClusterSpec& s) { return s; })
      .def("__deepcopy__", [](const d::ClusterSpec& s, nb::handle) { return s; })
      .def("__getstate__", &as_dict)
      .def("__setstate__", [](d::ClusterSpec* self, nb::handle state) { new (self) d::ClusterSpec(spec_of(state)); });
  cls.attr("__hash__") = nb::none();  // mutable-looking and compared by value, as TF's: not hashable
}

}  // namespace lockstep::python
