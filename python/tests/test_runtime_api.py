"""The tf.* names about the program rather than tensors (issue 36): checkpoint readers, tf.debugging, extension types
and dispatch, tf.types, the strategy choices of tf.distribute, TensorFlow 2's Keras aliases."""
import subprocess
import sys
import typing

import numpy as np
import pytest

from conftest import tensorflow_or_skip


def test_load_checkpoint_lists_and_reads_what_a_checkpoint_saved(tf, tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="dense")])
    v = tf.Variable([1.0, 2.0])
    prefix = tf.train.Checkpoint(model=model, v=v).save(str(tmp_path / "ckpt"))
    listed = tf.train.list_variables(str(tmp_path))  # a directory reads its latest checkpoint, as TF's
    assert listed == sorted(listed)
    assert dict(listed) == {"model/dense/kernel": [3, 2], "model/dense/bias": [2], "v": [2], "save_counter": []}
    reader = tf.train.load_checkpoint(prefix)
    np.testing.assert_array_equal(reader.get_tensor("v"), [1.0, 2.0])
    np.testing.assert_array_equal(reader.get_tensor("model/dense/kernel"), model.layers[0].kernel.numpy())
    assert reader.get_tensor("save_counter") == 1
    assert reader.get_variable_to_dtype_map()["v"] == tf.float32
    assert reader.has_tensor("v") and not reader.has_tensor("w")
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "v"), [1.0, 2.0])
    with pytest.raises(tf.errors.NotFoundError, match="Key w not found"):
        reader.get_tensor("w")


def test_load_checkpoint_refuses_a_missing_or_corrupt_checkpoint(tf, tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="no checkpoint in directory"):
        tf.train.load_checkpoint(str(tmp_path))
    prefix = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0, 3.0])).save(str(tmp_path / "c"))
    path = prefix + ".safetensors"
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        tf.train.load_checkpoint(prefix)


def test_debugging_assertions_pass_quietly_and_fail_with_invalid_argument(tf):
    tf.debugging.assert_equal(tf.constant([1, 2]), [1, 2])
    tf.assert_less(tf.constant([1.0]), 2.0)
    tf.debugging.assert_near(tf.constant([1.0]), [1.0 + 1e-7])
    tf.debugging.assert_shapes([(tf.zeros([2, 3]), ("N", "D")), (tf.zeros([2]), ("N",))])
    with pytest.raises(tf.errors.InvalidArgumentError, match="x < y"):
        tf.debugging.assert_less(tf.constant([1, 2]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.debugging.assert_positive(tf.constant([-1.0]), message="negative")
    with pytest.raises(ValueError, match="rank 2"):
        tf.debugging.assert_rank(tf.zeros([3]), 2)
    with pytest.raises(ValueError, match="expected shape"):
        tf.debugging.assert_shapes([(tf.zeros([2, 3]), ("N", "D")), (tf.zeros([3]), ("N",))])
    x = tf.constant([1.0, 2.0])
    assert tf.debugging.check_numerics(x, "fine") is x
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad : Tensor had Inf and NaN values"):
        tf.debugging.check_numerics(tf.constant([np.inf, np.nan]), "bad")
    with pytest.raises(TypeError, match="floating-point"):
        tf.debugging.check_numerics(tf.constant([1]), "ints")


def test_check_numerics_message_is_tensorflows():
    real = tensorflow_or_skip()
    with pytest.raises(real.errors.InvalidArgumentError, match="bad : Tensor had Inf and NaN values"):
        real.debugging.check_numerics(real.constant([np.inf, np.nan]), "bad")




def _masked_tensor_class(tf):
    class MaskedTensor(tf.experimental.ExtensionType):
        values: tf.Tensor
        mask: tf.Tensor

        def __validate__(self):
            if self.values.shape != self.mask.shape:
                raise ValueError("values and mask must have one shape")

    return MaskedTensor


def test_extension_type_fields_are_converted_checked_and_frozen(tf):
    MaskedTensor = _masked_tensor_class(tf)
    mt = MaskedTensor([1, 2, 3], mask=[True, False, True])
    assert mt.values.dtype == tf.int32 and mt.mask.dtype == tf.bool
    assert bool(mt == MaskedTensor([1, 2, 3], [True, False, True]))
    assert not bool(mt == MaskedTensor([1, 2, 4], [True, False, True]))
    assert repr(mt).startswith("MaskedTensor(values=<tf.Tensor")
    with pytest.raises(AttributeError, match="Cannot mutate attribute `values`"):
        mt.values = tf.constant([0])
    with pytest.raises(ValueError, match="one shape"):
        MaskedTensor([1, 2], [True])
    with pytest.raises(TypeError, match="MaskedTensor"):
        MaskedTensor([1])
    spec = tf.type_spec_from_value(mt)
    assert spec.values == tf.TensorSpec([3], tf.int32) and spec.value_type is MaskedTensor

    class Described(tf.experimental.ExtensionType):
        name: str
        shape: tf.TensorShape
        dtype: tf.DType = tf.float32
        sizes: typing.Tuple[int, ...] = ()

        def __init__(self, name, n):
            self.name, self.shape, self.sizes = name, [n], (n, n)

    d = Described("a", 3)
    assert d.shape == tf.TensorShape([3]) and d.dtype == tf.float32 and d.sizes == (3, 3)
    with pytest.raises(TypeError, match="Described.name: expected str"):
        Described(3, 3)


def test_extension_type_behaves_as_tensorflows():
    real = tensorflow_or_skip()

    class MaskedTensor(real.experimental.ExtensionType):
        values: real.Tensor
        mask: real.Tensor

    mt = MaskedTensor([1, 2, 3], [True, False, True])
    with pytest.raises(AttributeError, match="Cannot mutate attribute `values`"):
        mt.values = real.constant([0])
    assert bool(mt == MaskedTensor([1, 2, 3], [True, False, True]))


def test_dispatch_for_api_and_elementwise_apis_route_calls_by_type(tf):
    MaskedTensor = _masked_tensor_class(tf)
    mt = MaskedTensor([1.0, -2.0], [True, False])

    @tf.experimental.dispatch_for_api(tf.math.add)
    def masked_add(x: MaskedTensor, y: MaskedTensor, name=None):
        return MaskedTensor(x.values + y.values, x.mask & y.mask)

    @tf.experimental.dispatch_for_unary_elementwise_apis(MaskedTensor)
    def masked_unary(api_func, x):
        return MaskedTensor(api_func(x.values), x.mask)

    try:
        for add in (tf.math.add, tf.add):  # one API under both names, as in TensorFlow
            np.testing.assert_array_equal(add(mt, mt).values.numpy(), [2.0, -4.0])
        assert int(tf.math.add(1, 2)) == 3  # other arguments reach the op
        np.testing.assert_array_equal(tf.abs(mt).values.numpy(), [1.0, 2.0])
        np.testing.assert_array_equal(tf.math.exp(mt).values.numpy(), np.exp([1.0, -2.0]).astype(np.float32))
    finally:
        tf.experimental.unregister_dispatch_for(masked_add)
        tf.experimental.unregister_dispatch_for(masked_unary)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.math.add(mt, mt)
    with pytest.raises(ValueError, match="was not registered"):
        tf.experimental.unregister_dispatch_for(masked_add)
    with pytest.raises(ValueError, match="no annotated parameters"):
        tf.experimental.dispatch_for_api(tf.math.add)(lambda x, y, name=None: x)


def test_trace_type_is_an_abstract_base_to_subclass(tf):
    with pytest.raises(TypeError):
        tf.types.experimental.TraceType()

    class Fruit(tf.types.experimental.TraceType):
        def is_subtype_of(self, other):
            return self == other

        def most_specific_common_supertype(self, others):
            return self if all(o == self for o in others) else None

        def __eq__(self, other):
            return type(other) is Fruit

        def __hash__(self):
            return 0

    assert Fruit().is_subtype_of(Fruit())


def test_mirrored_strategy_uses_the_logical_cpus_as_tensorflow_does(tmp_path):
    """TF's MirroredStrategy() makes one replica per logical CPU set_logical_device_configuration made (no GPU);
    CentralStorageStrategy computes on the first. Run in a fresh process: the device configuration is global."""
    script = tmp_path / "devices.py"
    script.write_text(
        "import sys, lockstep as tf\n"
        "cpu = tf.config.list_physical_devices('CPU')[0]\n"
        "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
        "m = tf.distribute.MirroredStrategy(cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())\n"
        "c = tf.distribute.experimental.CentralStorageStrategy()\n"
        "print(m.num_replicas_in_sync, c.num_replicas_in_sync)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["2", "1"]


def test_mirrored_strategy_refuses_what_is_not_cross_device_ops(tf):
    with pytest.raises(ValueError, match="cross_device_ops must be"):
        tf.distribute.MirroredStrategy(cross_device_ops="nccl")


def test_tensorflow_2_aliases_of_keras_and_the_version(tf):
    assert tf.initializers is tf.keras.initializers and tf.metrics is tf.keras.metrics
    init = tf.random_normal_initializer(0.0, 0.02, seed=1)
    assert init([2, 2]).shape == (2, 2)
    assert tf.zeros_initializer()([2]).numpy().tolist() == [0.0, 0.0]
    assert tf.version.VERSION == tf.__version__
    assert tf.get_logger().name == "tensorflow"
    assert tf.type_spec_from_value(tf.constant(["a"])) == tf.TensorSpec([1], tf.string)
    with pytest.raises(TypeError, match="Could not build a TypeSpec"):
        tf.type_spec_from_value(object())


def test_get_next_as_optional_ends_with_an_empty_optional(tf):
    dataset = tf.data.Dataset.range(3).batch(2)
    strategy = tf.distribute.MirroredStrategy()
    for iterator in (iter(dataset), iter(strategy.experimental_distribute_dataset(dataset))):
        seen = []
        while True:
            optional = iterator.get_next_as_optional()
            if not bool(optional.has_value()):
                break
            seen.append(optional.get_value().numpy().tolist())
        assert seen == [[0, 1], [2]]
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not have a value"):
            optional.get_value()
    value = tf.experimental.Optional.from_value({"a": tf.constant([1.0])})
    assert value.element_spec == {"a": tf.TensorSpec([1], tf.float32)}
    assert not bool(tf.experimental.Optional.empty(tf.TensorSpec([], tf.int32)).has_value())
