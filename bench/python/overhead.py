"""Per-call cost of a small op from Python, in ns: lockstep's tf.add and `a + b` on one-element tensors against
the floor of a nanobind call into lockstep (a method that does nothing but return) and against TensorFlow's eager
tf.add on the same machine when given its Python (--tf). Prints one JSON object."""
import json
import sys
import timeit


def per_call_ns(stmt, ns, number=200000):
    return min(timeit.repeat(stmt, globals=ns, number=number, repeat=5)) / number * 1e9


def main():
    import lockstep as tf

    a, b = tf.constant([1.0]), tf.constant([2.0])
    out = {
        "nanobind_floor": per_call_ns("a._id()", locals()),
        "lockstep_add": per_call_ns("add(a, b)", {"add": tf.add, "a": a, "b": b}),
        "lockstep_operator": per_call_ns("a + b", locals()),
        "lockstep_add_python_number": per_call_ns("a + 1.0", locals()),
    }
    if "--tf" in sys.argv:
        import tensorflow as real

        x, y = real.constant([1.0]), real.constant([2.0])
        out["tensorflow_add"] = per_call_ns("add(x, y)", {"add": real.add, "x": x, "y": y}, number=20000)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
