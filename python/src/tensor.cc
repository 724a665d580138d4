// Tensors, Variables, GradientTape and the ops TensorFlow programs call, for lockstep._lockstep. Arguments that
// TensorFlow takes as tensors are taken as Python objects and converted by to_tensor, so NumPy arrays, Python
// numbers and lists work wherever a tensor does. Every op releases the GIL while it computes.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <mutex>

#include "bindings.h"
#include "lockstep/autograd/ops.h"
#include "lockstep/autograd/tape.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/core/philox.h"
#include "lockstep/keras/losses.h"

namespace lockstep::python {
namespace {

// NumPy, imported once and kept for the life of the process (never released: it outlives the interpreter's
// module teardown otherwise).
nb::handle numpy() {
  static PyObject* np = nb::module_::import_("numpy").release().ptr();
  return np;
}

bool is_tensor_like(nb::handle v) { return nb::isinstance<Tensor>(v) || nb::isinstance<Variable>(v); }

DType dtype_from_numpy_name(const std::string& name) {
  if (name == "bool") return DType::bool_;
  for (DType t : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8, DType::bfloat16})
    if (dtype_name(t) == name) return t;
  throw InvalidArgumentError(make_message("lockstep has no ", name,
                                          " tensors: use float32, float64, bfloat16, int64, int32, uint8 or bool"));
}

std::string numpy_name(DType t) { return t == DType::bool_ ? "bool" : std::string(dtype_name(t)); }

std::vector<int64_t> int_list(nb::handle v) {
  std::vector<int64_t> out;
  if (v.is_none()) return out;
  if (PyLong_Check(v.ptr())) return {nb::cast<int64_t>(v)};
  if (is_tensor_like(v) || nb::isinstance(v, numpy().attr("ndarray"))) return to_tensor(v).to_vector<int64_t>();
  for (nb::handle item : nb::iter(v)) out.push_back(item.is_none() ? -1 : nb::cast<int64_t>(nb::int_(item)));
  return out;
}

Shape to_shape(nb::handle v) { return Shape(int_list(v)); }

// The two operands of a binary op: a tensor operand first, the other converted to its dtype if it is Python data.
std::pair<Tensor, Tensor> operands(nb::handle a, nb::handle b) {
  if (is_tensor_like(a) || !is_tensor_like(b)) {
    Tensor x = to_tensor(a);
    return {x, to_tensor(b, std::nullopt, x.dtype())};
  }
  Tensor y = to_tensor(b);
  return {to_tensor(a, std::nullopt, y.dtype()), y};
}

template <Tensor (*Op)(const Tensor&, const Tensor&)> Tensor binary(nb::handle a, nb::handle b) {
  auto [x, y] = operands(a, b);
  nb::gil_scoped_release unlocked;
  return Op(x, y);
}

template <Tensor (*Op)(const Tensor&, const Tensor&)> Tensor reflected(nb::handle a, nb::handle b) {
  return binary<Op>(b, a);
}

template <Tensor (*Op)(const Tensor&)> Tensor unary(nb::handle a) {
  Tensor x = to_tensor(a);
  nb::gil_scoped_release unlocked;
  return Op(x);
}

Tensor logical(kernels::cpu::Binary op, nb::handle a, nb::handle b) {
  auto [x, y] = operands(a, b);
  nb::gil_scoped_release unlocked;
  return raw_ops::binary(op, x, y);
}

// TF's floor division and remainder: the quotient rounds toward -inf and a nonzero remainder takes the divisor's sign.
// The quotient has no gradient (TF's has none); a float remainder a - floor(a / b) * b differentiates as TF's.
Tensor integer_floor_op(const Tensor& a, const Tensor& b, bool remainder) {
  const Shape shape = add(a, b).shape();  // checks the dtypes and broadcasts the shapes
  std::vector<int64_t> x = broadcast_to(a, shape).contiguous().to_vector<int64_t>();
  std::vector<int64_t> y = broadcast_to(b, shape).contiguous().to_vector<int64_t>();
  for (size_t i = 0; i < x.size(); ++i) {
    LS_CHECK(y[i] != 0, InvalidArgumentError, "Integer division by zero: the divisor has a 0 at element ", i);
    int64_t q = x[i] / y[i], r = x[i] % y[i];
    if (r != 0 && ((r < 0) != (y[i] < 0))) {
      q -= 1;
      r += y[i];
    }
    x[i] = remainder ? r : q;
  }
  return raw_ops::cast(from_vector(x, shape), a.dtype());
}

Tensor floordiv(const Tensor& a, const Tensor& b) {
  if (!is_floating(a.dtype()) && a.dtype() != DType::bool_) return integer_floor_op(a, b, false);
  Tensor q = divide(a, b);
  std::vector<double> f = q.contiguous().to_vector<double>();
  for (double& v : f) v = std::floor(v);
  return raw_ops::cast(from_vector(f, q.shape()), q.dtype());
}

Tensor floormod(const Tensor& a, const Tensor& b) {
  if (!is_floating(a.dtype()) && a.dtype() != DType::bool_) return integer_floor_op(a, b, true);
  return subtract(a, multiply(floordiv(a, b), b));
}

Tensor matmul_plain(const Tensor& a, const Tensor& b) { return matmul(a, b); }

Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return negative(reduce_max(negative(x), axes, keepdims));
}

using Reduction = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);
template <Reduction Op> Tensor reduce(nb::handle x, nb::handle axis, bool keepdims) {
  Tensor t = to_tensor(x);
  std::vector<int64_t> axes = int_list(axis);
  if (!axis.is_none() && axes.empty()) return t;  // reducing over no axes
  nb::gil_scoped_release unlocked;
  return Op(t, axes, keepdims);
}

// tf.random's global generator: set_seed makes the sequence of draws that follows repeatable.
struct RandomState {
  std::mutex mutex;
  Philox rng{0x5eed};
  uint64_t stream = 0;
} g_random;

Philox next_generator(std::optional<uint64_t> seed) {
  std::lock_guard lock(g_random.mutex);
  if (seed) return Philox(g_random.rng.state().seed, *seed);
  return Philox(g_random.rng.state().seed, 1000 + g_random.stream++);
}

Tensor variable_value(const Variable& v) { return v.read(); }

// A Python callable owned by a tape's backward closure. The tape may drop the closure with the GIL released (a plain
// tape clears its record at the end of gradient()), so the reference is released under the GIL, once; after the
// interpreter is gone it is left alone.
class PyCallable {
 public:
  explicit PyCallable(nb::handle f) : f_(f.inc_ref().ptr()) {}
  PyCallable(const PyCallable&) = delete;
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable() {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
    nb::gil_scoped_acquire locked;
    Py_DECREF(f_);
  }
  nb::handle get() const { return f_; }

 private:
  PyObject* f_;
};

// ops.record_gradient: records `output`, computed in Python from `inputs`, on the active tapes; `backward(dy)` returns
// one gradient (a tensor or None) per input. The backward runs under the GIL on whichever thread computes gradients.
void record_gradient(std::vector<nb::object> inputs, const Tensor& output, nb::handle backward) {
  LS_CHECK(PyCallable_Check(backward.ptr()), InvalidArgumentError, "record_gradient's backward must be callable");
  std::vector<Tensor> ins;
  for (nb::handle x : inputs) ins.push_back(to_tensor(x));
  std::vector<const Tensor*> pointers;
  for (const Tensor& x : ins) {
    LS_CHECK(x.id() != output.id(), InvalidArgumentError,
             "record_gradient's output is one of its inputs: pass ops.stop_gradient(output), a new tensor of its data");
    pointers.push_back(&x);
  }
  if (!GradientTape::should_record(pointers)) return;
  auto f = std::make_shared<PyCallable>(backward);
  const size_t n = ins.size();
  GradientTape::record(pointers, output, [f, n](const Tensor& dy, const std::vector<bool>&) {
    nb::gil_scoped_acquire locked;
    nb::object result = f->get()(dy);
    std::vector<Tensor> grads;
    for (nb::handle g : result) grads.push_back(g.is_none() ? Tensor() : to_tensor(g));
    LS_CHECK(grads.size() == n, InvalidArgumentError, "a gradient function returned ", grads.size(),
             " gradients for ", n, " inputs: return one (or None) per input");
    return grads;
  });
}

// Operators and conversions shared by Tensor and Variable; `self` is converted like any operand.
template <typename Class> void bind_operators(Class& cls) {
  cls.def("__add__", &binary<add>)
      .def("__radd__", &reflected<add>)
      .def("__sub__", &binary<subtract>)
      .def("__rsub__", &reflected<subtract>)
      .def("__mul__", &binary<multiply>)
      .def("__rmul__", &reflected<multiply>)
      .def("__truediv__", &binary<divide>)
      .def("__rtruediv__", &reflected<divide>)
      .def("__floordiv__", &binary<floordiv>)
      .def("__rfloordiv__", &reflected<floordiv>)
      .def("__mod__", &binary<floormod>)
      .def("__rmod__", &reflected<floormod>)
      .def("__pow__", &binary<pow>)
      .def("__rpow__", &reflected<pow>)
      .def("__matmul__", &binary<matmul_plain>)
      .def("__rmatmul__", &reflected<matmul_plain>)
      .def("__neg__", &unary<negative>)
      .def("__pos__", [](nb::handle a) { return to_tensor(a); })
      .def("__abs__", &unary<abs>)
      .def("__lt__", &binary<less>)
      .def("__le__", &binary<less_equal>)
      .def("__gt__", &binary<greater>)
      .def("__ge__", &binary<greater_equal>)
      .def("__eq__", [](nb::handle a, nb::handle b) -> nb::object {
        if (b.is_none()) return nb::bool_(false);
        return nb::cast(binary<equal>(a, b));
      })
      .def("__ne__", [](nb::handle a, nb::handle b) -> nb::object {
        if (b.is_none()) return nb::bool_(true);
        return nb::cast(binary<not_equal>(a, b));
      })
      .def("__and__", [](nb::handle a, nb::handle b) { return logical(kernels::cpu::Binary::logical_and, a, b); })
      .def("__or__", [](nb::handle a, nb::handle b) { return logical(kernels::cpu::Binary::logical_or, a, b); })
      .def("__invert__", [](nb::handle a) { return raw_ops::unary(kernels::cpu::Unary::logical_not, to_tensor(a)); })
      .def("numpy", [](nb::handle a) { return to_numpy(to_tensor(a)); })
      .def("__float__", [](nb::handle a) { return to_tensor(a).item<double>(); })
      .def("__int__", [](nb::handle a) { return to_tensor(a).item<int64_t>(); })
      .def("__index__", [](nb::handle a) {
        Tensor t = to_tensor(a);
        LS_CHECK(!is_floating(t.dtype()), InvalidArgumentError, "only an integer tensor can be used as an index");
        return t.item<int64_t>();
      })
      .def("__bool__", [](nb::handle a) {
        Tensor t = to_tensor(a);
        LS_CHECK(t.numel() == 1, InvalidArgumentError, "the truth value of a tensor of shape ", t.shape().str(),
                 " is ambiguous: use tf.reduce_any or tf.reduce_all");
        return t.item<double>() != 0;
      })
      .def("__len__", [](nb::handle a) {
        Tensor t = to_tensor(a);
        if (t.rank() == 0) throw nb::type_error("len() of a scalar tensor");
        return t.dim(0);
      })
      .def_prop_ro("_shape_tuple", [](nb::handle a) { return to_tensor(a).shape().dims(); })
      .def_prop_ro("_dtype", [](nb::handle a) { return to_tensor(a).dtype(); })
      .def_prop_ro("ndim", [](nb::handle a) { return to_tensor(a).rank(); });
  cls.attr("__hash__") = nb::none();
}

}  // namespace

DType to_dtype(nb::handle v) {
  if (nb::isinstance<DType>(v)) return nb::cast<DType>(v);
  if (nb::hasattr(v, "_lockstep_dtype")) return to_dtype(v.attr("_lockstep_dtype"));
  if (nb::isinstance<nb::str>(v)) {
    std::string name = nb::cast<std::string>(v);
    return dtype_from_numpy_name(name == "float" ? "float32" : name);
  }
  if (v.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::float32;
  if (v.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::int32;
  if (v.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::bool_;
  return dtype_from_numpy_name(nb::cast<std::string>(numpy().attr("dtype")(v).attr("name")));
}

Tensor to_tensor(nb::handle v, std::optional<DType> dtype, std::optional<DType> hint) {
  auto checked = [&](const Tensor& t) {
    if (dtype && t.dtype() != *dtype)
      throw InvalidArgumentError(make_message("a tensor of dtype ", dtype_name(t.dtype()), " where ",
                                              dtype_name(*dtype), " is wanted: use tf.cast"));
    return t;
  };
  if (nb::isinstance<Tensor>(v)) return checked(nb::cast<const Tensor&>(v));
  if (nb::isinstance<Variable>(v)) return checked(nb::cast<const Variable&>(v).read());
  if (nb::hasattr(v, "_lockstep_tensor_")) return to_tensor(v.attr("_lockstep_tensor_")(), dtype, hint);
  // Python scalars, without a trip through NumPy.
  if (PyBool_Check(v.ptr())) return scalar(v.ptr() == Py_True ? 1 : 0, dtype.value_or(DType::bool_));
  if (PyFloat_Check(v.ptr())) {
    DType t = dtype ? *dtype : hint && is_floating(*hint) ? *hint : DType::float32;
    return scalar(PyFloat_AsDouble(v.ptr()), t);
  }
  if (PyLong_Check(v.ptr()) && (dtype || hint)) return scalar(nb::cast<double>(v), dtype ? *dtype : *hint);
  nb::handle np = numpy();
  const bool python_data = !nb::isinstance(v, np.attr("ndarray")) && !nb::isinstance(v, np.attr("generic"));
  nb::object array = np.attr("asarray")(v);
  std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
  if (kind == "O" || kind == "U" || kind == "S")
    throw InvalidArgumentError(make_message("cannot make a tensor of ", nb::cast<std::string>(nb::repr(v)),
                                            ": lockstep tensors hold numbers and booleans, not strings or objects"));
  DType target;
  if (dtype) {
    target = *dtype;
  } else if (python_data && kind == "f") {
    target = hint && is_floating(*hint) ? *hint : DType::float32;
  } else if (python_data && (kind == "i" || kind == "u")) {
    target = hint ? *hint : DType::int32;
  } else {
    target = dtype_from_numpy_name(nb::cast<std::string>(array.attr("dtype").attr("name")));
  }
  // bfloat16 (which NumPy lacks unless ml_dtypes is loaded) is made by lockstep's cast from float32.
  const DType stored = target == DType::bfloat16 ? DType::float32 : target;
  array = np.attr("asarray")(array, numpy_name(stored), nb::arg("order") = "C");  // (ascontiguousarray makes 0-d 1-d)
  auto data = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(array);
  std::vector<int64_t> dims(data.ndim());
  for (size_t i = 0; i < data.ndim(); ++i) dims[i] = static_cast<int64_t>(data.shape(i));
  Tensor out = from_data(data.data(), Shape(dims), stored);
  return stored == target ? out : raw_ops::cast(out, target);
}

nb::object to_numpy(const Tensor& t) {
  Tensor c = (t.dtype() == DType::bfloat16 ? raw_ops::cast(t, DType::float32) : t).cpu().contiguous();
  std::vector<size_t> shape(c.shape().dims().begin(), c.shape().dims().end());
  nb::dlpack::dtype dt = visit_dtype(c.dtype(), [](auto v) {
    if constexpr (std::is_same_v<decltype(v), bfloat16>)
      return nb::dtype<float>();
    else
      return nb::dtype<decltype(v)>();
  });
  auto* owner = new Tensor(c);
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<nb::numpy>(c.raw_data(), shape.size(), shape.data(), keep, nullptr, dt).cast();
}

void bind_tensor(nb::module_& m) {
  nb::enum_<DType>(m, "DType")
      .value("float32", DType::float32)
      .value("bfloat16", DType::bfloat16)
      .value("float64", DType::float64)
      .value("int64", DType::int64)
      .value("int32", DType::int32)
      .value("uint8", DType::uint8)
      .value("bool", DType::bool_);

  auto tensor = nb::class_<Tensor>(m, "Tensor")
                    .def(nb::init<>())
                    .def("_id", &Tensor::id)
                    .def("_is_contiguous", &Tensor::is_contiguous)
                    .def("_str", &Tensor::str);
  bind_operators(tensor);

  nb::class_<Variable> variable(m, "Variable");
  variable
      .def(
          "__init__",
          [](Variable* self, nb::handle initial_value, bool trainable, std::optional<std::string> name,
             nb::handle dtype) {
            Tensor init = to_tensor(initial_value, dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype)));
            new (self) Variable(init.clone(), VariableOptions{name.value_or("Variable"), trainable});
          },
          nb::arg("initial_value"), nb::arg("trainable") = true, nb::arg("name").none() = nb::none(),
          nb::arg("dtype").none() = nb::none())
      .def_prop_ro("_name", &Variable::name)
      .def_prop_ro("trainable", &Variable::trainable)
      .def("_unique_id", &Variable::unique_id)
      .def("read_value", &variable_value)
      .def("value", &variable_value)
      .def("_assign", [](const Variable& v, nb::handle value) {
        Tensor t = to_tensor(value, v.dtype());
        nb::gil_scoped_release unlocked;
        v.assign(t);
      })
      .def("_assign_add", [](const Variable& v, nb::handle value) {
        Tensor t = to_tensor(value, v.dtype());
        nb::gil_scoped_release unlocked;
        v.assign_add(t);
      })
      .def("_assign_sub", [](const Variable& v, nb::handle value) {
        Tensor t = to_tensor(value, v.dtype());
        nb::gil_scoped_release unlocked;
        v.assign_sub(t);
      });
  bind_operators(variable);

  nb::class_<GradientTape>(m, "_GradientTape")
      .def(
          "__init__",
          [](GradientTape* self, bool persistent, bool watch_accessed_variables) {
            new (self) GradientTape(GradientTapeOptions{persistent, watch_accessed_variables});
            self->exit();  // it records inside `with` only
          },
          nb::arg("persistent") = false, nb::arg("watch_accessed_variables") = true)
      .def("_enter", &GradientTape::enter)
      .def("_exit", &GradientTape::exit)
      .def("_watch", [](GradientTape& tape, nb::handle v) {
        if (nb::isinstance<Variable>(v))
          tape.watch(nb::cast<const Variable&>(v));
        else
          tape.watch(nb::cast<const Tensor&>(v));
      })
      .def("reset", &GradientTape::reset)
      // Gradients of `target` with respect to each source (Variables or Tensors); None where unconnected.
      .def("_gradient", [](GradientTape& tape, const Tensor& target, std::vector<nb::object> sources,
                           std::optional<Tensor> output_gradient) {
        std::vector<Variable> variables;
        std::vector<Tensor> tensors;
        bool all_variables = true;
        for (nb::handle s : sources) {
          if (nb::isinstance<Variable>(s)) {
            variables.push_back(nb::cast<const Variable&>(s));
            tensors.push_back(variables.back().value());
          } else {
            all_variables = false;
            tensors.push_back(to_tensor(s));
          }
        }
        std::vector<Tensor> grads;
        {
          nb::gil_scoped_release unlocked;
          grads = all_variables ? tape.gradient(target, variables, output_gradient.value_or(Tensor()))
                                : tape.gradient(target, tensors, output_gradient.value_or(Tensor()));
        }
        nb::list out;
        for (const Tensor& g : grads) out.append(g.defined() ? nb::cast(g) : nb::none());
        return out;
      }, nb::arg("target"), nb::arg("sources"), nb::arg("output_gradient").none());

  nb::module_ ops = m.def_submodule("ops", "lockstep's ops, as tf.* and tf.math.* call them");
  ops.def("convert_to_tensor",
          [](nb::handle v, nb::handle dtype, nb::handle hint) {
            return to_tensor(v, dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype)),
                             hint.is_none() ? std::nullopt : std::optional(to_dtype(hint)));
          },
          nb::arg("value"), nb::arg("dtype").none() = nb::none(), nb::arg("dtype_hint").none() = nb::none());
  ops.def("to_numpy", [](nb::handle v) { return to_numpy(to_tensor(v)); });
  ops.def("add", &binary<add>);
  ops.def("subtract", &binary<subtract>);
  ops.def("multiply", &binary<multiply>);
  ops.def("divide", &binary<divide>);
  ops.def("floordiv", &binary<floordiv>);
  ops.def("floormod", &binary<floormod>);
  ops.def("pow", &binary<pow>);
  ops.def("maximum", &binary<maximum>);
  ops.def("minimum", &binary<minimum>);
  ops.def("equal", &binary<equal>);
  ops.def("not_equal", &binary<not_equal>);
  ops.def("less", &binary<less>);
  ops.def("less_equal", &binary<less_equal>);
  ops.def("greater", &binary<greater>);
  ops.def("greater_equal", &binary<greater_equal>);
  ops.def("logical_and", [](nb::handle a, nb::handle b) { return logical(kernels::cpu::Binary::logical_and, a, b); });
  ops.def("logical_or", [](nb::handle a, nb::handle b) { return logical(kernels::cpu::Binary::logical_or, a, b); });
  ops.def("logical_not", [](nb::handle a) { return raw_ops::unary(kernels::cpu::Unary::logical_not, to_tensor(a)); });
  ops.def("negative", &unary<negative>);
  ops.def("exp", &unary<exp>);
  ops.def("log", &unary<log>);
  ops.def("sqrt", &unary<sqrt>);
  ops.def("rsqrt", &unary<rsqrt>);
  ops.def("square", &unary<square>);
  ops.def("abs", &unary<abs>);
  ops.def("sign", &unary<sign>);
  ops.def("sigmoid", &unary<sigmoid>);
  ops.def("tanh", &unary<tanh>);
  ops.def("relu", &unary<nn::relu>);
  ops.def("l2_loss", &unary<nn::l2_loss>);
  ops.def("stop_gradient", &unary<stop_gradient>);
  ops.def("identity", [](nb::handle a) { return to_tensor(a); });
  ops.def("add_n", [](std::vector<nb::object> xs) {
    std::vector<Tensor> ts;
    for (nb::handle x : xs) ts.push_back(to_tensor(x, std::nullopt, ts.empty() ? std::nullopt : std::optional(ts[0].dtype())));
    nb::gil_scoped_release unlocked;
    return add_n(ts);
  });
  ops.def("where", [](nb::handle cond, nb::handle a, nb::handle b) {
    Tensor c = to_tensor(cond, DType::bool_);
    auto [x, y] = operands(a, b);
    nb::gil_scoped_release unlocked;
    return where(c, x, y);
  });
  ops.def("cast", [](nb::handle x, nb::handle dtype) {
    Tensor t = to_tensor(x);
    DType d = to_dtype(dtype);
    nb::gil_scoped_release unlocked;
    return cast(t, d);
  });
  ops.def("reduce_sum", &reduce<reduce_sum>, nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  ops.def("reduce_mean", &reduce<reduce_mean>, nb::arg("x"), nb::arg("axis").none() = nb::none(),
          nb::arg("keepdims") = false);
  ops.def("reduce_max", &reduce<reduce_max>, nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  ops.def("reduce_min", &reduce<reduce_min>, nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  ops.def("argmax", [](nb::handle x, int64_t axis) {
    Tensor t = to_tensor(x);
    nb::gil_scoped_release unlocked;
    return argmax(t, axis);
  });
  ops.def("reshape", [](nb::handle x, nb::handle shape) {
    Tensor t = to_tensor(x);
    Shape s = to_shape(shape);
    nb::gil_scoped_release unlocked;
    return reshape(t, s);
  });
  ops.def("broadcast_to", [](nb::handle x, nb::handle shape) { return broadcast_to(to_tensor(x), to_shape(shape)); });
  ops.def("transpose", [](nb::handle x, nb::handle perm) { return transpose(to_tensor(x), int_list(perm)); },
          nb::arg("x"), nb::arg("perm").none());
  ops.def("slice", [](nb::handle x, nb::handle begin, nb::handle size) {
    Tensor t = to_tensor(x);
    std::vector<int64_t> b = int_list(begin), s = int_list(size);
    LS_CHECK(b.size() == static_cast<size_t>(t.rank()) && s.size() == b.size(), InvalidArgumentError,
             "slice of a rank-", t.rank(), " tensor needs ", t.rank(), " begin and size values");
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == -1) s[i] = t.dim(static_cast<int64_t>(i)) - b[i];
    nb::gil_scoped_release unlocked;
    return slice(t, b, s);
  });
  ops.def("concat", [](std::vector<nb::object> xs, int64_t axis) {
    std::vector<Tensor> ts;
    for (nb::handle x : xs) ts.push_back(to_tensor(x));
    nb::gil_scoped_release unlocked;
    return concat(ts, axis);
  });
  ops.def("linspace", [](const Tensor& start, const Tensor& stop, int64_t num, int64_t axis) {
    nb::gil_scoped_release unlocked;
    return linspace(start, stop, num, axis);
  });
  ops.def("stack", [](std::vector<nb::object> xs, int64_t axis) {
    std::vector<Tensor> ts;
    for (nb::handle x : xs) ts.push_back(to_tensor(x));
    nb::gil_scoped_release unlocked;
    return stack(ts, axis);
  });
  ops.def("gather", [](nb::handle params, nb::handle indices) {
    Tensor p = to_tensor(params), i = to_tensor(indices);
    nb::gil_scoped_release unlocked;
    return gather(p, i);
  });
  ops.def("one_hot", [](nb::handle indices, int64_t depth, double on, double off, nb::handle dtype) {
    return one_hot(to_tensor(indices), depth, on, off, to_dtype(dtype));
  });
  ops.def("matmul", [](nb::handle a, nb::handle b, bool transpose_a, bool transpose_b) {
    auto [x, y] = operands(a, b);
    nb::gil_scoped_release unlocked;
    return matmul(x, y, transpose_a, transpose_b);
  });
  ops.def("fill", [](nb::handle shape, nb::handle value, nb::handle dtype) {
    Tensor v = to_tensor(value, dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype)));
    return full(to_shape(shape), v.item<double>(), v.dtype());
  }, nb::arg("shape"), nb::arg("value"), nb::arg("dtype").none());
  ops.def("range", [](double start, double limit, double delta, nb::handle dtype) {
    return arange(start, limit, delta, to_dtype(dtype));
  });
  ops.def("softmax", [](nb::handle x, int64_t axis) { return nn::softmax(to_tensor(x), axis); });
  ops.def("log_softmax", [](nb::handle x, int64_t axis) { return nn::log_softmax(to_tensor(x), axis); });
  ops.def("sparse_softmax_cross_entropy_with_logits", [](nb::handle labels, nb::handle logits) {
    Tensor l = to_tensor(labels), z = to_tensor(logits);
    nb::gil_scoped_release unlocked;
    return nn::sparse_softmax_cross_entropy_with_logits(l, z);
  });
  ops.def("conv2d", [](nb::handle x, nb::handle filters, int64_t stride_h, int64_t stride_w, const std::string& padding) {
    Tensor t = to_tensor(x), f = to_tensor(filters);
    Conv2dParams p{stride_h, stride_w, raw_ops::padding_from_name(padding)};
    nb::gil_scoped_release unlocked;
    return nn::conv2d(t, f, {}, p);
  });
  ops.def("pool2d", [](nb::handle x, bool max, int64_t pool_h, int64_t pool_w, int64_t stride_h, int64_t stride_w,
                       const std::string& padding) {
    Tensor t = to_tensor(x);
    Pool2dOptions p{pool_h, pool_w, stride_h, stride_w, raw_ops::padding_from_name(padding)};
    nb::gil_scoped_release unlocked;
    return max ? nn::max_pool2d(t, p) : nn::avg_pool2d(t, p);
  });
  ops.def("compute_average_loss", [](nb::handle per_example_loss, nb::handle sample_weight, int64_t global_batch_size) {
    Tensor loss = to_tensor(per_example_loss);
    nn::AverageLossOptions options{global_batch_size,
                                   sample_weight.is_none() ? Tensor() : to_tensor(sample_weight, std::nullopt, loss.dtype())};
    nb::gil_scoped_release unlocked;
    return nn::compute_average_loss(loss, options);
  }, nb::arg("per_example_loss"), nb::arg("sample_weight").none(), nb::arg("global_batch_size"));
  ops.def("scale_regularization_loss", [](nb::handle loss) { return nn::scale_regularization_loss(to_tensor(loss)); });
  ops.def("current_num_replicas_in_sync", &nn::current_num_replicas_in_sync);
  ops.def("random", [](const std::string& kind, nb::handle shape, double a, double b, nb::handle dtype,
                       std::optional<uint64_t> seed) {
    Philox rng = next_generator(seed);
    Shape s = to_shape(shape);
    DType d = to_dtype(dtype);
    if (kind == "uniform") return random_uniform(s, rng, a, b, d);
    if (kind == "normal") return random_normal(s, rng, a, b, d);
    return truncated_normal(s, rng, a, b, d);
  });
  ops.def("record_gradient", &record_gradient, nb::arg("inputs"), nb::arg("output"), nb::arg("backward"));
  ops.def("set_random_seed", [](uint64_t seed) {
    std::lock_guard lock(g_random.mutex);
    g_random.rng = Philox(seed);
    g_random.stream = 0;
  });
}

}  // namespace lockstep::python
