"""tf.data from Python (deliverable 4 of issue 22): pipelines over the C++ Dataset give TensorFlow's elements, in
TensorFlow's structures, and bad input raises one-line Python exceptions."""
import threading

import numpy as np
import pytest

import lockstep as tf
from conftest import tensorflow_or_skip
from lockstep import _lockstep
from lockstep.data import _structure

X = np.arange(20, dtype=np.float32).reshape(10, 2)
Y = np.arange(10, dtype=np.int64) * 3
W = np.linspace(0, 1, 10).astype(np.float64)

def generate(n):
    for i in range(n):
        yield np.full([i % 3 + 1], i, np.float32), i


# Pipelines whose order is deterministic, written once against either module (lockstep or TensorFlow).
PIPELINES = {
    "tuple_batch": lambda m: m.data.Dataset.from_tensor_slices((X, Y)).batch(3),
    "triple_drop_remainder": lambda m: m.data.Dataset.from_tensor_slices((X, Y, W)).batch(4, drop_remainder=True),
    "single_tensor": lambda m: m.data.Dataset.from_tensor_slices(X).map(lambda x: x * 2.0 + 1.0),
    "dict_to_tuple": lambda m: m.data.Dataset.from_tensor_slices({"a": X, "b": Y}).map(
        lambda d: (d["a"] * 2.0, d["b"] + 1)).batch(4),
    "dict_stays_dict": lambda m: m.data.Dataset.from_tensor_slices({"image": X, "label": Y}).batch(5),
    "nested": lambda m: m.data.Dataset.from_tensor_slices(((X, Y), W)).batch(2),
    "range_skip_take_repeat": lambda m: m.data.Dataset.range(10).skip(2).take(5).repeat(2).batch(3),
    "scan": lambda m: m.data.Dataset.range(6).scan(np.int64(0), lambda s, x: (s + x, (s + x, x * 2))),
    "scan_tuple_state": lambda m: m.data.Dataset.from_tensor_slices(X).scan(
        (np.float32(0), np.int64(1)), lambda s, x: ((s[0] + x[0], s[1] * 2), (x, s[0], s[1]))).batch(4),
    "range_args": lambda m: m.data.Dataset.range(3, 20, 4),
    "range_int32": lambda m: m.data.Dataset.range(1, 8, 2, output_type=m.int32),
    "zip_shard": lambda m: m.data.Dataset.zip((m.data.Dataset.range(10), m.data.Dataset.range(10, 30))).shard(3, 1),
    "zip_dict": lambda m: m.data.Dataset.zip({"i": m.data.Dataset.range(4),
                                              "x": m.data.Dataset.from_tensor_slices(X)}),
    "from_tensors": lambda m: m.data.Dataset.from_tensors(([1, 2], 3.5)).repeat(3),
    "filter": lambda m: m.data.Dataset.range(12).filter(lambda x: x > 6).batch(2),
    "unbatch": lambda m: m.data.Dataset.from_tensor_slices((X, Y)).batch(3).unbatch().skip(4),
    "map_python_numbers": lambda m: m.data.Dataset.range(4).map(lambda x: (x, 1.5, 7)),
    "map_numpy": lambda m: m.data.Dataset.range(4).map(lambda x: np.float64(2.5)),
    "map_list_becomes_tuple": lambda m: m.data.Dataset.from_tensor_slices(X).map(lambda x: [x, x]),
    "five_components": lambda m: m.data.Dataset.from_tensor_slices((X, Y, W, Y + 1, X[:, 0] > 4)).map(
        lambda a, b, c, d, e: (e, d, c, b, a)).batch(3),
    "five_from_map": lambda m: m.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: {"x": x, "y": y, "y2": y * 2, "s": x[0], "t": (y, x)}).batch(4).unbatch(),
    "five_with_strings": lambda m: m.data.Dataset.from_tensor_slices(
        (Y[:5], ["cat", "dog", "chicken", "horse", "goat"], X[:5], W[:5], Y[:5] > 6)).map(
        lambda a, s, x, w, b: {"s": s, "a": a, "x": x, "w": w, "b": b, "again": s}).batch(2),
    "flat_map": lambda m: m.data.Dataset.range(1, 5).flat_map(
        lambda n: m.data.Dataset.zip((m.data.Dataset.range(n), m.data.Dataset.from_tensor_slices(m.fill([n], n))))),
    "interleave": lambda m: m.data.Dataset.range(1, 6).interleave(
        lambda n: m.data.Dataset.range(n).map(lambda i: i * 10 + n), cycle_length=2, block_length=3),
    "interleave_default_cycle": lambda m: m.data.Dataset.range(1, 12).interleave(
        lambda n: m.data.Dataset.from_tensors(n).repeat(n)),
    "padded_batch": lambda m: m.data.Dataset.range(1, 8).map(lambda n: (m.fill([n], n), m.fill([2, n], 1.5))).padded_batch(
        3),
    "padded_batch_shapes_values": lambda m: m.data.Dataset.range(1, 6).map(
        lambda n: {"v": m.fill([n], n), "s": m.fill([n - 1, 2], 2.0)}).padded_batch(
        2, padded_shapes={"v": [7], "s": [None, 3]}, padding_values={"v": m.constant(-1, m.int64), "s": 9.0},
        drop_remainder=True),
    "counter": lambda m: m.data.Dataset.counter(5, 3).take(4),
    "cache_repeat": lambda m: m.data.Dataset.from_tensor_slices(Y).map(lambda y: y - 1).cache().repeat(3),
    "prefetch_autotune": lambda m: m.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (x + 1.0, y)).batch(4).prefetch(m.data.AUTOTUNE),
    "strings": lambda m: m.data.Dataset.from_tensor_slices(np.array([b"ab", b"cd", b"ef"])).batch(2),
    "string_list_and_dict": lambda m: m.data.Dataset.from_tensor_slices(
        {"n": [1, 2, 3], "s": ["a", "bb", ""], "o": np.array(["x", "yy", "zzz"], dtype=object)}).batch(2),
    "map_returns_strings": lambda m: m.data.Dataset.range(2).map(lambda x: ["a", "b"]),
    "strings_of_any_length": lambda m: m.data.Dataset.from_tensor_slices(
        (np.array(["a", "", "longer text", "xyz"]), Y[:4])).map(lambda s, y: (y, s)).batch(3).unbatch().batch(2),
    "enumerate": lambda m: m.data.Dataset.from_tensor_slices(Y).enumerate(5),
    "from_generator": lambda m: m.data.Dataset.from_generator(
        generate, args=(7,), output_signature=(m.TensorSpec([None], m.float32), m.TensorSpec([], m.int64))).map(
        lambda v, i: (m.reduce_sum(v), i * 2)).batch(3),
    "concatenate": lambda m: m.data.Dataset.from_tensor_slices((X, Y)).take(3).concatenate(
        m.data.Dataset.from_tensor_slices((X * 2, Y)).skip(8)).batch(2),
    # Nests of more than three leaves, strings among them, through every stage that restacks leaves.
    "many_leaves_padded_batch": lambda m: m.data.Dataset.from_tensor_slices(
        {"s": np.array([b"a", b"bb", b"", b"dddd", b"e"]), "n": Y[:5], "t": (X[:5], W[:5])}).map(
        lambda d: {**d, "v": m.fill([d["n"] + 1], d["n"])}).padded_batch(2, padding_values={
            "s": "", "n": m.constant(0, m.int64), "t": (0.0, m.constant(0, m.float64)), "v": m.constant(-1, m.int64)}),
    "zip_of_nests": lambda m: m.data.Dataset.zip({
        "xy": m.data.Dataset.from_tensor_slices((X, Y)), "r": m.data.Dataset.range(10),
        "s": m.data.Dataset.from_tensor_slices(np.array([b"p", b"qq"] * 5))}).batch(3).unbatch().skip(
            1).map(lambda d: d).filter(lambda d: d["r"] != 2).batch(4),
    "from_generator_types": lambda m: m.data.Dataset.from_generator(
        lambda: ({"k": i, "v": [i, -i]} for i in range(5)), output_types={"k": m.int32, "v": m.float32},
        output_shapes={"k": [], "v": [2]}).batch(2),
}


def assert_same(got, want, where="element"):
    """Equal nested elements: the same kind of structure (tuple, dict), keys and leaves of equal values and dtype."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{where}: {got!r} vs {want!r}"
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, tuple):
        assert type(got) is tuple and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    else:
        g, w = np.asarray(got), np.asarray(want)
        assert g.dtype == w.dtype and g.shape == w.shape, f"{where}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w, err_msg=where)


def spec_summary(spec):
    """An element_spec as nested (shape, dtype name), for comparing TF's with lockstep's."""
    if isinstance(spec, dict):
        return {k: spec_summary(v) for k, v in spec.items()}
    if isinstance(spec, tuple):
        return tuple(spec_summary(v) for v in spec)
    return (tuple(spec.shape.as_list()), spec.dtype.name)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_gives_tensorflows_elements(name):
    real_tf = tensorflow_or_skip()
    want = list(PIPELINES[name](real_tf).as_numpy_iterator())
    got = list(PIPELINES[name](tf).as_numpy_iterator())
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} element {i}")


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_element_spec_and_cardinality_match_tensorflow(name):
    real_tf = tensorflow_or_skip()
    want, got = PIPELINES[name](real_tf), PIPELINES[name](tf)
    if name not in ("padded_batch", "many_leaves_padded_batch"):  # (their map's shapes vary; lockstep learns them
        # from the first element, TF traces)
        assert spec_summary(got.element_spec) == spec_summary(want.element_spec)
    assert int(got.cardinality()) == int(want.cardinality())


def test_make_csv_dataset_agrees_with_tensorflow(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("a,b,c,label\n" + "".join(f"{i},{i * 0.5},{i % 3},{i % 2}\n" for i in range(10)))
    kwargs = dict(batch_size=4, label_name="label", num_epochs=1, shuffle=False)
    got = list(tf.data.experimental.make_csv_dataset(str(path), **kwargs).as_numpy_iterator())
    assert [sorted(f) for f, _ in got] == [["a", "b", "c"]] * 3
    selected = tf.data.experimental.make_csv_dataset(str(path), 5, select_columns=["c", "a"], num_epochs=2)
    assert sorted(next(iter(selected))) == ["a", "c"]
    real_tf = tensorflow_or_skip()
    want = list(real_tf.data.experimental.make_csv_dataset(str(path), **kwargs).as_numpy_iterator())
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same((g[0], g[1]), (dict(w[0]), w[1]), f"csv batch {i}")
    assert len(got) == len(want)


def test_iteration_in_python():
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4)
    seen = [(x.shape.as_list(), y.dtype) for x, y in ds]
    assert seen == [([4, 2], tf.int64), ([4, 2], tf.int64), ([2, 2], tf.int64)]
    it = iter(ds)
    x, y = next(it)
    np.testing.assert_array_equal(x.numpy(), X[:4])
    assert isinstance(x, tf.Tensor)
    np.testing.assert_array_equal(it.get_next()[1].numpy(), Y[4:8])
    next(it)
    with pytest.raises(StopIteration):
        next(it)
    assert len(ds) == 3 and ds.cardinality().numpy() == 3
    single = tf.data.Dataset.from_tensor_slices(Y).take(1).get_single_element()
    assert int(single) == 0


def test_map_receives_lockstep_tensors_in_the_elements_structure():
    seen = []

    def fn(features, label):
        seen.append((type(features), tuple(sorted(features)), type(label)))
        return features["a"] + 1.0, label

    ds = tf.data.Dataset.from_tensor_slices(({"a": X, "b": Y}, Y)).map(fn, num_parallel_calls=tf.data.AUTOTUNE)
    assert [int(y) for _, y in ds] == list(Y)
    assert set(seen) == {(dict, ("a", "b"), tf.Tensor)}
    assert ds._cpp.stages[0].startswith("map")


def test_every_dataset_holds_the_cpp_pipeline():
    ds = tf.data.Dataset.from_tensor_slices((X, Y))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    made = [ds, ds.map(lambda x, y: (x, y)), ds.filter(lambda x, y: y > 3), ds.shuffle(4, seed=1), ds.batch(2),
            ds.repeat(2), ds.take(3), ds.skip(1), ds.shard(2, 0), ds.cache(), ds.prefetch(1), ds.batch(2).unbatch(),
            ds.with_options(options), tf.data.Dataset.zip((ds, ds)), tf.data.Dataset.range(3),
            tf.data.Dataset.from_tensors(X), ds.enumerate()]
    for d in made:
        assert isinstance(d, tf.data.Dataset) and isinstance(d._cpp, _lockstep.data.Dataset)
    stages = ds.map(lambda x, y: (x, y)).batch(2).prefetch(2)._cpp.stages
    assert [s.split("(")[0] for s in stages] == ["prefetch", "batch", "map", "from_tensor_slices"]
    # (x, y) reaches C++ as Element{x, y}: what Keras' fit reads.
    x, y = next(iter(ds.batch(10)._cpp))
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_array_equal(y.numpy(), Y)


def test_a_dropped_pipeline_is_freed():
    import gc
    import weakref

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x, y))
    ds = tf.data.Dataset.zip((ds, tf.data.Dataset.range(3).map(lambda i: (i, i, i)))).filter(lambda a, b: True)
    list(ds)
    refs = [weakref.ref(ds)]
    del ds
    gc.collect()
    assert all(r() is None for r in refs)


def test_iterator_state_restores_new_stages():
    ds = tf.data.Dataset.range(1, 6).interleave(lambda n: tf.data.Dataset.range(n).map(lambda i: i * 10 + n),
                                                cycle_length=2, block_length=2)
    r = tf.data.Dataset.range(3)
    ds = tf.data.Dataset.zip((ds, ds.map(lambda x: (x, x)).batch(2).unbatch())).concatenate(
        tf.data.Dataset.zip((r, tf.data.Dataset.zip((r, r)))))
    it = ds._cpp.make_iterator(0)
    for _ in range(7):
        next(it)
    state = it.save_state()
    rest = [[int(t) for t in _structure.flatten(s)] for s in it]
    again = ds._cpp.make_iterator(0)
    again.restore_state(state)
    assert [[int(t) for t in _structure.flatten(s)] for s in again] == rest and len(rest) > 5


def test_sample_from_datasets_and_scan():
    a, b = tf.data.Dataset.range(0, 50), tf.data.Dataset.range(100, 150)
    ds = tf.data.Dataset.sample_from_datasets([a, b], weights=[0.3, 0.7], seed=4)
    assert ds.element_spec == tf.TensorSpec([], tf.int64)
    got = [int(x) for x in ds]
    assert [v for v in got if v < 100] == list(range(50)) and [v for v in got if v >= 100] == list(range(100, 150))
    assert got == [int(x) for x in ds]  # the same draws for every iterator
    stopped = [int(x) for x in tf.data.experimental.sample_from_datasets([a, b], [0.3, 0.7], 4, True)]
    assert len(stopped) < 100 and stopped == got[:len(stopped)]
    with pytest.raises(TypeError, match="sample_from_datasets: incompatible"):
        tf.data.Dataset.sample_from_datasets([a, a.map(lambda x: (x, x))])

    # Both stages resume from a saved iterator state, the scan's state held in it.
    ds = ds.scan(np.int64(0), lambda s, x: (s + x, s))
    it = ds._cpp.make_iterator(0)
    for _ in range(37):
        next(it)
    state = it.save_state()
    rest = [[int(t) for t in _structure.flatten(s)] for s in it]
    again = ds._cpp.make_iterator(3)
    again.restore_state(state)
    assert [[int(t) for t in _structure.flatten(s)] for s in again] == rest and len(rest) == 63


def test_keras_reads_x_y_sample_weight_slots():
    ds = tf.data.Dataset.from_tensor_slices((X, Y, W)).batch(5)
    assert ds._keras_cpp() is ds._cpp
    assert tf.data.Dataset.from_tensor_slices(X)._keras_cpp() is not None
    with pytest.raises(ValueError, match="map them to such a tuple"):
        tf.data.Dataset.from_tensor_slices({"a": X, "b": Y})._keras_cpp()
    with pytest.raises(ValueError, match="map them to such a tuple"):
        tf.data.Dataset.from_tensor_slices(((X, X), Y))._keras_cpp()


def test_shuffle_with_a_seed_is_a_repeatable_permutation():
    ds = tf.data.Dataset.range(100).shuffle(30, seed=7)
    first, second = [int(x) for x in ds], [int(x) for x in ds]
    assert sorted(first) == list(range(100)) and first != list(range(100))
    assert first != second  # reshuffle_each_iteration (TF's default): each pass its own order
    again = tf.data.Dataset.range(100).shuffle(30, seed=7)
    assert [int(x) for x in again] == first  # and the same orders in a new program
    fixed = tf.data.Dataset.range(100).shuffle(30, seed=7, reshuffle_each_iteration=False)
    assert [int(x) for x in fixed] == [int(x) for x in fixed]
    epochs = [int(x) for x in tf.data.Dataset.range(10).shuffle(10, seed=3).repeat(2)]
    assert sorted(epochs[:10]) == sorted(epochs[10:]) == list(range(10)) and epochs[:10] != epochs[10:]


def test_options_auto_shard_policy():
    options = tf.data.Options()
    assert options.experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.AUTO
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    options.threading.private_threadpool_size = 4
    ds = tf.data.Dataset.range(4).with_options(options).batch(2)
    assert ds.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF
    assert ds._cpp.auto_shard_policy == "OFF"
    later = tf.data.Options()
    later.experimental_deterministic = False
    merged = ds.with_options(later).options()
    assert merged.experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF
    assert merged.threading.private_threadpool_size == 4 and merged.experimental_deterministic is False
    assert isinstance(tf.data.experimental.DistributeOptions(), tf.data.experimental.DistributeOptions)
    with pytest.raises(AttributeError):
        options.no_such_option = 1
    with pytest.raises(ValueError):
        options.experimental_distribute.auto_shard_policy = 17


def test_autoshard_policy_values_are_tensorflows():
    real_tf = tensorflow_or_skip()
    for name in ("OFF", "AUTO", "FILE", "DATA"):
        assert int(getattr(tf.data.experimental.AutoShardPolicy, name)) == int(
            getattr(real_tf.data.experimental.AutoShardPolicy, name))
    assert tf.data.AUTOTUNE == real_tf.data.AUTOTUNE
    assert tf.data.INFINITE_CARDINALITY == real_tf.data.INFINITE_CARDINALITY
    assert tf.data.UNKNOWN_CARDINALITY == real_tf.data.UNKNOWN_CARDINALITY


def test_cardinality_of_infinite_and_unknown():
    assert int(tf.data.Dataset.range(5).repeat().cardinality()) == tf.data.INFINITE_CARDINALITY
    assert int(tf.data.Dataset.range(5).repeat().take(7).cardinality()) == 7
    assert int(tf.data.Dataset.range(5).filter(lambda x: x > 1).cardinality()) == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(tf.data.Dataset.range(5).repeat())


def one_line(e):
    message = str(e.value)
    assert message and "\n" not in message, message
    return message


def test_bad_input_raises_one_line_python_exceptions(tmp_path):
    with pytest.raises(ValueError) as e:
        tf.data.Dataset.from_tensor_slices((np.zeros((3, 2)), np.zeros(2)))
    assert "3" in one_line(e) and "2" in one_line(e) and "same length" in one_line(e)
    with pytest.raises(ValueError) as e:
        tf.data.Dataset.from_tensor_slices(np.float32(3))
    assert "scalar" in one_line(e)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.data.Dataset.range(3).batch(0)
    assert "batch_size" in one_line(e)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.data.Dataset.range(3).shuffle(0)
    assert "buffer_size" in one_line(e)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.data.Dataset.range(3).shard(2, 5)
    one_line(e)
    with pytest.raises(tf.errors.NotFoundError) as e:
        list(tf.data.TFRecordDataset(str(tmp_path / "missing.tfrecord")))
    assert "missing.tfrecord" in one_line(e)
    with pytest.raises(ValueError) as e:
        tf.data.TFRecordDataset(str(tmp_path / "x"), compression_type="LZ4")
    assert "GZIP" in one_line(e)
    with pytest.raises(ValueError) as e:  # as TF: "Cannot unbatch an input with scalar components."
        tf.data.Dataset.range(3).unbatch()
    assert "scalar" in one_line(e)
    with pytest.raises(TypeError):
        tf.data.Dataset.range(3).map(42)
    with pytest.raises(TypeError):
        tf.data.Dataset.range(3).batch("two")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:  # elements of one batch must match
        list(tf.data.Dataset.range(1, 4).map(lambda n: tf.zeros([n])).batch(3))
    one_line(e)
    with pytest.raises(TypeError) as e:  # a map whose structure changes between elements
        list(tf.data.Dataset.range(3).map(lambda n: n if int(n) < 1 else (n, n)))
    assert "structure" in one_line(e)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        list(tf.data.Dataset.range(1, 5).map(lambda n: tf.fill([n], 1)).padded_batch(4, padded_shapes=[2]))
    assert "padded_shapes" in one_line(e)
    with pytest.raises(NotImplementedError, match="window is not implemented by lockstep"):
        tf.data.Dataset.range(3).window(2)
    with pytest.raises(NotImplementedError, match="tf.data.experimental.choose_from_datasets"):
        tf.data.experimental.choose_from_datasets


class Boom(Exception):
    pass


@pytest.mark.parametrize("prefetch", [0, 2])
def test_an_exception_in_map_reaches_the_iterating_code(prefetch):
    def fn(x):
        if int(x) == 3:
            raise Boom("element three is bad")
        return x * 2

    ds = tf.data.Dataset.range(10).map(fn).batch(2).prefetch(prefetch)
    seen = []
    with pytest.raises(Boom, match="element three is bad"):
        for batch in ds:
            seen.append(batch.numpy().tolist())
    assert seen == [[0, 2]]
    with pytest.raises(ZeroDivisionError):
        list(tf.data.Dataset.range(3).filter(lambda x: 1 / 0))
    with pytest.raises(KeyError):  # while the structure is learnt (element_spec traces the function)
        tf.data.Dataset.range(3).map(lambda x: {}["k"]).element_spec


def test_an_exception_in_a_generator_reaches_the_iterating_code():
    def generator():
        yield 1
        raise Boom("the generator broke")

    ds = tf.data.Dataset.from_generator(generator, output_types=tf.int32).prefetch(2)
    with pytest.raises(Boom, match="the generator broke"):
        list(ds)
    with pytest.raises(TypeError, match="output_signature"):
        tf.data.Dataset.from_generator(generator)


def test_python_functions_run_on_prefetch_threads_without_deadlock():
    calls = set()

    def fn(x):
        calls.add(threading.get_ident())
        return x + 1

    ds = tf.data.Dataset.range(200).map(fn).prefetch(4).map(fn).prefetch(2)
    assert [int(x) for x in ds] == list(range(2, 202))
    assert threading.get_ident() not in calls  # the C++ prefetch threads called Python
    it = iter(ds)
    next(it)
    del it  # an iterator dropped mid-stream stops its threads


def test_threads_can_share_an_iterator():
    it = iter(tf.data.Dataset.range(2000).map(lambda x: x * 1).prefetch(3))
    taken = [[] for _ in range(4)]

    def drain(out):
        for x in it:
            out.append(int(x))

    threads = [threading.Thread(target=drain, args=(out,)) for out in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(sum(taken, [])) == list(range(2000))


def test_exiting_with_open_iterators_ends_cleanly():
    import subprocess
    import sys

    program = ("import lockstep as tf\n"
               "ds = tf.data.Dataset.range(10**9).map(lambda x: x + 1).prefetch(8).map(lambda x: x * 2).prefetch(4)\n"
               "it = iter(ds)\n"
               "print(int(next(it)))\n"
               "raw = ds._cpp.make_iterator()\n"
               "next(raw)\n")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr


def test_strings_from_tfrecords_and_numpy_leaves(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for record in (b"one", b"two!", b""):
            w.write(record)
    ds = tf.data.TFRecordDataset([path])
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    records = list(ds)
    assert [r.numpy() for r in records] == [b"one", b"two!", b""] and records[0].dtype == tf.string
    assert list(ds.as_numpy_iterator()) == [b"one", b"two!", b""]
    pairs = list(ds.map(lambda r: (r, 1)).as_numpy_iterator())
    assert pairs == [(b"one", 1), (b"two!", 1), (b"", 1)]


def test_text_line_dataset_reads_lines_as_tensorflow(tmp_path):
    import gzip

    real_tf = tensorflow_or_skip()
    (tmp_path / "a.txt").write_bytes(b"first\nsecond\r\n\nlast without newline")
    (tmp_path / "empty.txt").write_bytes(b"")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as f:
        f.write("ünïcode\n\nend\n".encode())
    plain = [str(tmp_path / "a.txt"), str(tmp_path / "empty.txt")]
    for files, compression in ((plain, None), ([str(tmp_path / "b.txt.gz")], "GZIP")):
        want = list(real_tf.data.TextLineDataset(files, compression_type=compression).batch(2).as_numpy_iterator())
        got = list(tf.data.TextLineDataset(files, compression_type=compression).batch(2).as_numpy_iterator())
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    ds = tf.data.TextLineDataset(plain).skip(1)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert [bytes(s) for s in ds] == [b"second", b"", b"last without newline"]
    with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
        list(tf.data.TextLineDataset(str(tmp_path / "missing.txt")))
