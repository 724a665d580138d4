"""tf.config from Python: the CPU as TensorFlow lists it, the GPUs of a CUDA build, intra-op threads reaching lockstep's thread
count, and the settings that mean nothing on lockstep read back as TensorFlow's do."""
import pytest
from conftest import tensorflow_or_skip


@pytest.fixture
def config(tf):
    """tf.config, with its process-wide settings put back after the test."""
    settings = {key: (dict(value) if isinstance(value, dict) else value)
                for key, value in tf.config._settings.items()}
    yield tf.config
    tf.config._settings.update(settings)
    tf._lockstep.config.set_num_threads(0)


def test_devices(config):
    cpu, = config.list_physical_devices()
    assert cpu == config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
    assert config.list_physical_devices("CPU") == [cpu] == config.experimental.list_physical_devices("CPU")
    gpus = config._cc.gpu_count()
    assert config.list_physical_devices("GPU") == [
        config.PhysicalDevice(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(gpus)]
    assert config.list_logical_devices("CPU") == [config.LogicalDevice(name="/device:CPU:0", device_type="CPU")]
    assert config.list_logical_devices("GPU") == [
        config.LogicalDevice(name=f"/device:GPU:{i}", device_type="GPU") for i in range(gpus)]
    assert config.get_visible_devices() == [cpu]
    assert config.experimental.get_device_details(cpu) == {}


def test_device_places_variables_on_a_gpu(tf):
    if tf._lockstep.config.gpu_count() == 0:
        pytest.skip("no GPU visible to this process")
    with tf.device("/job:localhost/replica:0/task:0/device:GPU:0"):
        v = tf.Variable([1.0, 2.0])
    assert tf._lockstep.config.default_device() == "/cpu:0"
    assert (v * 2).numpy().tolist() == [2.0, 4.0]


def test_device_names_are_checked(tf):
    with pytest.raises(Exception, match="/gpu:N"):
        with tf.device("/tpu:0"):
            pass
    with tf.device(None), tf.device("/cpu:0"):
        assert tf._lockstep.config.default_device() == "/cpu:0"


def test_devices_agree_with_tensorflow(config):
    real_tf = tensorflow_or_skip()
    for device_type in (None, "CPU", "GPU", "cpu"):
        ours = [tuple(d) for d in config.list_physical_devices(device_type)]
        assert ours == [tuple(d) for d in real_tf.config.list_physical_devices(device_type)], device_type
    assert [tuple(d) for d in config.list_logical_devices("CPU")] == [
        tuple(d) for d in real_tf.config.list_logical_devices("CPU")]
    assert config.optimizer.get_jit() == real_tf.config.optimizer.get_jit()
    assert config.optimizer.get_experimental_options() == real_tf.config.optimizer.get_experimental_options()
    assert config.get_soft_device_placement() == real_tf.config.get_soft_device_placement()


def test_logical_cpus(config):
    cpu, = config.list_physical_devices("CPU")
    assert config.get_logical_device_configuration(cpu) is None
    config.set_logical_device_configuration(cpu, [config.LogicalDeviceConfiguration()] * 2)
    assert config.list_logical_devices("CPU") == [config.LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(2)]
    assert config.get_logical_device_configuration(cpu) == [config.LogicalDeviceConfiguration()] * 2
    assert config.experimental.VirtualDeviceConfiguration is config.LogicalDeviceConfiguration


def test_intra_op_threads_set_lockstep_threads(tf, config):
    assert config.threading.get_intra_op_parallelism_threads() == 0
    config.threading.set_intra_op_parallelism_threads(1)
    assert config.threading.get_intra_op_parallelism_threads() == 1 == tf._lockstep.config.num_threads()
    config.threading.set_intra_op_parallelism_threads(0)  # lockstep's default: the usable cores
    assert tf._lockstep.config.num_threads() >= 1
    config.threading.set_inter_op_parallelism_threads(3)
    assert config.threading.get_inter_op_parallelism_threads() == 3


def test_recorded_settings(config):
    config.run_functions_eagerly(True)
    assert config.functions_run_eagerly() and config.experimental_functions_run_eagerly()
    config.optimizer.set_jit(True)
    assert config.optimizer.get_jit() == "autoclustering"
    config.optimizer.set_jit(False)
    assert config.optimizer.get_jit() == ""
    config.optimizer.set_experimental_options({"layout_optimizer": False})
    assert config.optimizer.get_experimental_options()["layout_optimizer"] is False
    config.set_soft_device_placement(False)
    assert not config.get_soft_device_placement()
    config.set_visible_devices([], "GPU")
    assert config.get_visible_devices("GPU") == [] and config.get_visible_devices("CPU")


def test_errors(config):
    cpu, = config.list_physical_devices("CPU")
    with pytest.raises(ValueError, match="Cannot set memory growth on non-GPU"):
        config.experimental.set_memory_growth(cpu, True)
    fake = config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    with pytest.raises(ValueError, match="Unrecognized device"):
        config.experimental.set_memory_growth(fake, True)
    with pytest.raises(ValueError, match="Unrecognized device"):
        config.set_visible_devices([fake], "GPU")
    for name in ("experimental_connect_to_cluster", "experimental.enable_op_determinism",
                 "experimental.get_memory_info", "threading.no_such", "optimizer.no_such"):
        module = config
        *path, last = name.split(".")
        for part in path:
            module = getattr(module, part)
        if last == "no_such":
            with pytest.raises(AttributeError):
                getattr(module, last)
        else:
            with pytest.raises(NotImplementedError, match=f"tf.config.{name} is not implemented by lockstep"):
                getattr(module, last)
