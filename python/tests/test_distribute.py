"""tf.distribute in one process: MirroredStrategy's replicas on threads, the default strategy, the replica
context, distributed datasets, the options and cluster resolvers; agreement with TensorFlow where it is installed."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import BIN_DIR, tensorflow_or_skip


@pytest.fixture
def mirrored(tf):
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def dataset(tf, x, y, batch_size):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


def test_run_gives_per_replica_values_that_reduce_and_gather(tf, mirrored):
    assert mirrored.num_replicas_in_sync == 2

    def fn(x):
        ctx = tf.distribute.get_replica_context()
        return x * float(ctx.replica_id_in_sync_group + 1)

    out = mirrored.run(fn, args=(tf.constant([1.0, 2.0]),))
    assert isinstance(out, tf.distribute.DistributedValues)
    local = mirrored.experimental_local_results(out)
    np.testing.assert_allclose([v.numpy() for v in local], [[1, 2], [2, 4]])
    np.testing.assert_allclose(mirrored.reduce(tf.distribute.ReduceOp.SUM, out, axis=None).numpy(), [3, 6])
    np.testing.assert_allclose(mirrored.reduce("mean", out, axis=None).numpy(), [1.5, 3])
    assert mirrored.reduce("SUM", out, axis=0).numpy() == pytest.approx(9)
    assert mirrored.reduce("MEAN", out, axis=0).numpy() == pytest.approx(2.25)
    np.testing.assert_allclose(mirrored.gather(out, axis=0).numpy(), [1, 2, 2, 4])


def test_run_selects_each_replicas_argument_and_regroups_nested_results(tf, mirrored):
    per_replica = mirrored.run(lambda: tf.constant(float(tf.distribute.get_replica_context().replica_id_in_sync_group)))
    shared = tf.constant(10.0)
    out = mirrored.run(lambda a, b, scale=1.0: {"sum": a + b * scale, "same": b}, args=(per_replica, shared),
                       kwargs={"scale": 2.0})
    assert out["same"] is shared  # the same object on every replica stays a plain value, as in TF
    assert [v.numpy() for v in mirrored.experimental_local_results(out["sum"])] == [20.0, 21.0]
    both = mirrored.experimental_local_results(out)
    assert len(both) == 2 and both[1]["sum"].numpy() == 21.0


def test_a_non_distributed_value_reduces_as_in_tf(tf, mirrored):
    assert mirrored.reduce("MEAN", tf.constant(2.0), axis=None).numpy() == 2.0
    with pytest.raises(ValueError, match="cannot be reduced with the given reduce op ReduceOp.SUM"):
        mirrored.reduce("SUM", tf.constant(2.0), axis=None)


def test_one_replica_gives_plain_values(tf):
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    out = strategy.run(lambda x: x + 1, args=(tf.constant(1.0),))
    assert not isinstance(out, tf.distribute.DistributedValues)
    assert strategy.reduce("SUM", out, axis=None).numpy() == 2.0
    assert strategy.experimental_local_results(out)[0].numpy() == 2.0


def test_scope_makes_the_strategy_current_and_cross_replica(tf, mirrored):
    default = tf.distribute.get_strategy()
    assert not tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()
    assert tf.distribute.get_replica_context().replica_id_in_sync_group == 0
    with mirrored.scope() as entered:
        assert entered is mirrored
        assert tf.distribute.get_strategy() is mirrored and tf.distribute.has_strategy()
        assert tf.distribute.in_cross_replica_context() and tf.distribute.get_replica_context() is None

        def inside():
            ctx = tf.distribute.get_replica_context()
            assert not tf.distribute.in_cross_replica_context()
            assert tf.distribute.get_strategy() is mirrored and ctx.strategy is mirrored
            return ctx.replica_id_in_sync_group

        ids = mirrored.run(inside)
        assert [int(v) for v in mirrored.experimental_local_results(ids)] == [0, 1]
    assert tf.distribute.get_strategy() is default


def test_replica_context_all_reduce_sums_gradients_over_replicas(tf, mirrored):
    w = tf.Variable([1.0, -1.0])  # outside the scope: each replica's gradient is reduced by all_reduce alone

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        (grad,) = tape.gradient(loss, [w])
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", grad), ctx.all_reduce(tf.distribute.ReduceOp.MEAN, {"g": grad})["g"]

    xs = mirrored.run(lambda: tf.constant([1.0, 2.0]) * float(tf.distribute.get_replica_context().replica_id_in_sync_group + 1))
    total, mean = mirrored.run(step, args=(xs,))
    for t in mirrored.experimental_local_results(total):
        np.testing.assert_allclose(t.numpy(), [3, 6])
    for m in mirrored.experimental_local_results(mean):
        np.testing.assert_allclose(m.numpy(), [1.5, 3])


def test_mirrored_variables_take_all_reduced_gradients_once_per_step(tf, mirrored):
    with mirrored.scope():
        w = tf.Variable([1.0, 1.0])

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        grads = tape.gradient(loss, [w])
        # What an optimizer does: the gradients the variables' hooks all-reduced during backward, then one update.
        (total,) = mirrored._cpp.all_reduce_gradients(grads, [w])
        def update(strategy, g):
            w.assign_sub(0.1 * strategy.experimental_local_results(g)[0])
            return strategy.num_replicas_in_sync

        return tf.distribute.get_replica_context().merge_call(update, args=(total,))

    xs = mirrored.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([1.0, 2.0]) * float(ctx.replica_id_in_sync_group + 1))
    for expected in ([0.7, 0.4], [0.4, -0.2]):
        assert mirrored.run(step, args=(xs,)) == 2  # the merge result, the same on every replica
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("failing", [0, 1])
def test_a_python_exception_in_one_replica_is_raised_at_once(tf, mirrored, failing):
    def fn():
        ctx = tf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == failing:
            raise KeyError("one replica failed")
        return ctx.all_reduce("SUM", tf.constant(1.0))  # the other waits here for the failed one

    start = time.monotonic()
    with pytest.raises(KeyError, match="one replica failed"):
        mirrored.run(fn)
    assert time.monotonic() - start < 10
    # The replicas' collective group is spent (as after a failed step in C++): later collectives fail, not hang.
    with pytest.raises(tf.errors.UnavailableError, match="failed"):
        mirrored.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0)))


def test_experimental_distribute_dataset_splits_each_global_batch(tf, mirrored):
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    y = np.arange(8, dtype=np.int64)
    dist = mirrored.experimental_distribute_dataset(dataset(tf, x, y, 4))
    seen = []
    steps = 0
    for xb, yb in dist:
        steps += 1
        local_x = mirrored.experimental_local_results(xb)
        local_y = mirrored.experimental_local_results(yb)
        assert [t.shape.as_list() for t in local_x] == [[2, 2], [2, 2]]
        for xs, ys in zip(local_x, local_y):
            np.testing.assert_allclose(xs.numpy(), x[ys.numpy()])
            seen.extend(ys.numpy().tolist())
    assert steps == 2 and sorted(seen) == list(range(8))
    it = iter(dist)
    first = next(it)
    assert isinstance(first, tuple) and len(first) == 2
    next(it)
    with pytest.raises(StopIteration):
        next(it)
    assert dist._cpp is not None  # what Keras' fit takes


def test_a_distributed_iterator_position_can_be_saved_and_restored(tf, mirrored):
    x = np.arange(12, dtype=np.float32)
    dist = mirrored.experimental_distribute_dataset(dataset(tf, x, x.astype(np.int64), 4))
    it = iter(dist)
    next(it)
    state = it._cpp._save_state()  # what tf.train.Checkpoint keeps for an iterator
    expected = [t.numpy().tolist() for t in mirrored.experimental_local_results(next(it)[0])]
    again = iter(dist)
    again._cpp._restore_state(state)
    assert [t.numpy().tolist() for t in mirrored.experimental_local_results(next(again)[0])] == expected
    with pytest.raises(ValueError, match="not JSON"):
        again._cpp._restore_state("{")


def test_a_step_over_the_distributed_dataset_reduces_to_the_global_sum(tf, mirrored):
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    dist = mirrored.experimental_distribute_dataset(dataset(tf, x, np.zeros(12, np.int64), 6))
    total = 0.0
    for batch in dist:
        per_replica = mirrored.run(lambda inputs: tf.reduce_sum(inputs[0]), args=(batch,))
        total += float(mirrored.reduce("SUM", per_replica, axis=None).numpy())
    assert total == pytest.approx(float(x.sum()))


def test_distribute_datasets_from_function_passes_an_input_context(tf, mirrored):
    x = np.arange(8, dtype=np.float32)
    contexts = []

    def dataset_fn(ctx):
        contexts.append(ctx)
        return dataset(tf, x, x.astype(np.int64), ctx.get_per_replica_batch_size(4))

    dist = mirrored.distribute_datasets_from_function(dataset_fn)
    (ctx,) = contexts
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 2)
    seen = sorted(v for xb, _ in dist for t in mirrored.experimental_local_results(xb) for v in t.numpy().tolist())
    assert seen == x.tolist()


def test_input_context(tf):
    ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (2, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="global batch size 10 is not divisible by num_replicas_in_sync 4"):
        ctx.get_per_replica_batch_size(10)


def test_values_from_function(tf, mirrored):
    out = mirrored.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group * 10)
    assert mirrored.experimental_local_results(out) == (0, 10)


def test_devices_are_checked_by_the_cpp_strategy(tf):
    with pytest.raises(ValueError, match="device '/gpu:0' is not available"):
        tf.distribute.MirroredStrategy(["/gpu:0"])
    assert tf.distribute.OneDeviceStrategy("/cpu:0").num_replicas_in_sync == 1


def test_communication_options(tf):
    exp = tf.distribute.experimental
    assert exp.CollectiveCommunication is exp.CommunicationImplementation
    assert [i.name for i in exp.CommunicationImplementation][:3] == ["AUTO", "RING", "NCCL"]
    options = exp.CommunicationOptions(bytes_per_pack=1 << 20, timeout_seconds=30,
                                       implementation=exp.CommunicationImplementation.RING)
    assert (options.bytes_per_pack, options.timeout_seconds) == (1 << 20, 30)
    with pytest.raises(ValueError, match="bytes_per_pack must be non-negative"):
        exp.CommunicationOptions(bytes_per_pack=-1)
    # One worker without TF_CONFIG: no cluster, no communication; NCCL (GPU-only) runs as RING, as TF on CPUs.
    for strategy in (tf.distribute.MultiWorkerMirroredStrategy(communication_options=options),
                     exp.MultiWorkerMirroredStrategy(communication=exp.CollectiveCommunication.NCCL),
                     tf.distribute.MultiWorkerMirroredStrategy(communication_options=exp.CommunicationOptions(
                         implementation=exp.CommunicationImplementation.NCCL))):
        assert strategy.num_replicas_in_sync == 1
        resolver = strategy.cluster_resolver
        assert (resolver.task_type, resolver.task_id, resolver.cluster_spec().as_dict()) == (None, None, {})
        assert strategy.reduce("SUM", strategy.run(lambda: tf.constant(3.0)), axis=None).numpy() == 3.0


def test_multi_worker_strategy_takes_an_explicit_cluster_resolver(tf, monkeypatch):
    resolvers = tf.distribute.cluster_resolver
    spec = {"worker": ["127.0.0.1:1"]}
    one_worker = json.dumps({"cluster": spec, "task": {"type": "worker", "index": 0}})
    for tf_config, resolver in ((one_worker, resolvers.TFConfigClusterResolver()),
                                ("{}", resolvers.SimpleClusterResolver(resolvers.ClusterSpec(spec), task_type="worker",
                                                                       task_id=0))):
        monkeypatch.setenv("TF_CONFIG", tf_config)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        r = strategy.cluster_resolver
        assert (r.task_type, r.task_id, r.cluster_spec().as_dict()) == ("worker", 0, spec)
        assert strategy.extended.worker_devices == ("/job:worker/replica:0/task:0/device:CPU:0",)
        assert strategy.extended.should_checkpoint


def test_cluster_spec(tf):
    from lockstep.distribute.cluster_resolver import ClusterSpec

    spec = ClusterSpec({"chief": ["h:1"], "worker": ["h:2", "h:3"]})
    assert spec.as_dict() == {"chief": ["h:1"], "worker": ["h:2", "h:3"]}
    assert spec.jobs == ["chief", "worker"] and spec.num_tasks("worker") == 2
    assert spec.task_address("worker", 1) == "h:3" and spec.task_indices("worker") == [0, 1]
    assert spec == ClusterSpec(spec.as_dict()) and spec != ClusterSpec({"worker": ["h:2"]})
    sparse = ClusterSpec({"worker": {1: "h:3"}})
    assert sparse.as_dict() == {"worker": {1: "h:3"}} and sparse.job_tasks("worker") == [None, "h:3"]
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("ps")
    assert not ClusterSpec({})


def test_tf_train_cluster_spec_is_this_one(tf):
    from lockstep.distribute.cluster_resolver import ClusterSpec

    try:
        train_spec = tf.train.ClusterSpec
    except NotImplementedError:
        pytest.skip("lockstep.train is not built yet: tf.train.ClusterSpec re-exports this module's ClusterSpec")
    assert train_spec is ClusterSpec


def test_tf_config_cluster_resolver(tf, monkeypatch):
    TFConfigClusterResolver = tf.distribute.cluster_resolver.TFConfigClusterResolver
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert (TFConfigClusterResolver().task_type, TFConfigClusterResolver().task_id) == (None, None)
    config = {"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]},
              "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    r = TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    assert r.cluster_spec().as_dict() == config["cluster"]
    assert r.master() == "grpc://127.0.0.1:3"
    assert TFConfigClusterResolver(task_type="chief", task_id=0).master() == "grpc://127.0.0.1:1"


def test_slurm_cluster_resolver(tf, monkeypatch):
    for name, value in {"SLURM_PROCID": "2", "SLURM_STEP_NUM_TASKS": "3", "SLURM_STEP_NODELIST": "node[1-2]",
                        "SLURM_STEP_TASKS_PER_NODE": "2,1"}.items():
        monkeypatch.setenv(name, value)
    r = tf.distribute.cluster_resolver.SlurmClusterResolver(port_base=9000)
    assert (r.task_type, r.task_id) == ("worker", 2)
    assert r.cluster_spec().as_dict() == {"worker": ["node1:9000", "node1:9001", "node2:9000"]}
    assert r.master() == "grpc://node2:9000"
    monkeypatch.setenv("SLURM_PROCID", "7")
    with pytest.raises(ValueError, match="SLURM_PROCID 7 is out of range for 3 tasks"):
        tf.distribute.cluster_resolver.SlurmClusterResolver()


def cli_error(tf_config):
    """The one line `lockstep tf-config` prints for a TF_CONFIG."""
    run = subprocess.run([str(BIN_DIR / "lockstep"), "tf-config"], env={**os.environ, "TF_CONFIG": tf_config},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    (line,) = run.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("tf_config", [
    '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}}',
    '{"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker"',
    '{"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}',
])
def test_a_malformed_tf_config_raises_the_cli_message(tf, monkeypatch, tf_config):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    for make in (tf.distribute.MultiWorkerMirroredStrategy,
                 lambda: tf.distribute.cluster_resolver.TFConfigClusterResolver().cluster_spec()):
        with pytest.raises(ValueError) as raised:
            make()
        assert str(raised.value) in cli_error(tf_config)


def test_what_lockstep_lacks_says_so(tf):
    for name in ("TPUStrategy", "ParameterServerStrategy"):
        with pytest.raises(NotImplementedError, match=f"tf.distribute.{name} is not implemented by lockstep"):
            getattr(tf.distribute, name)
    with pytest.raises(NotImplementedError, match="tf.distribute.experimental.ParameterServerStrategy"):
        tf.distribute.experimental.ParameterServerStrategy


def test_agrees_with_tensorflow(tf):
    real = tensorflow_or_skip()
    for lib in (tf, real):
        r = lib.distribute.cluster_resolver.SimpleClusterResolver(
            lib.train.ClusterSpec({"worker": ["a:1", "b:2"]}) if lib is real else
            tf.distribute.cluster_resolver.ClusterSpec({"worker": ["a:1", "b:2"]}), task_type="worker", task_id=1,
            rpc_layer="grpc")
        assert r.master() == "grpc://" and r.master("worker", 1) == "grpc://b:2"
        assert r.cluster_spec().as_dict() == {"worker": ["a:1", "b:2"]}
    for lib in (tf, real):
        options = lib.distribute.experimental.CommunicationOptions()
        assert str(options) == ("Options(bytes_per_pack=0,timeout_seconds=None, "
                                 "implementation=CommunicationImplementation.AUTO)")
        one = lib.distribute.MirroredStrategy(["/cpu:0"])
        out = one.run(lambda x: {"a": x * 2, "b": (x, x + 1)}, args=(lib.constant([1.0, 2.0]),))
        assert sorted(out) == ["a", "b"] and out["b"][1].numpy().tolist() == [2.0, 3.0]
        assert one.reduce("SUM", out["a"], axis=0).numpy() == 6.0
        assert one.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)


CUSTOM_LOOP = """
import json, sys
import numpy as np

def train(tf):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 1)).astype(np.float32)
    with strategy.scope():
        w = tf.Variable(np.array([[0.5], [-0.25], [0.125]], np.float32))
    xs = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(x[4 * ctx.replica_id_in_sync_group:4 * ctx.replica_id_in_sync_group + 4]))
    ys = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(y[4 * ctx.replica_id_in_sync_group:4 * ctx.replica_id_in_sync_group + 4]))

    def step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum(tf.square(tf.matmul(xb, w) - yb), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=8)
        return loss, tape.gradient(loss, w)

    losses = []
    for _ in range(3):
        loss, grad = strategy.run(step, args=(xs, ys))
        losses.append(float(strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None).numpy()))
        w.assign_sub(0.1 * strategy.reduce("SUM", grad, axis=None))
    return {"losses": losses, "w": w.numpy().ravel().tolist()}

if __name__ == "__main__":
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    print("RESULT " + json.dumps(train(tf)))
"""


def test_a_custom_loop_on_two_replicas_agrees_with_tensorflow(tf, tmp_path):
    tensorflow_or_skip()
    script = tmp_path / "custom_loop.py"
    script.write_text(CUSTOM_LOOP)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert run.returncode == 0, run.stderr
    expected = json.loads(run.stdout.split("RESULT ", 1)[1])
    namespace = {}
    exec(compile(CUSTOM_LOOP, str(script), "exec"), namespace)
    got = namespace["train"](tf)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5)
    np.testing.assert_allclose(got["w"], expected["w"], rtol=1e-5)


def _unbatched_elements(lib):
    def gen():
        for i in range(4):
            yield [float(i)]

    dataset = lib.data.Dataset.from_generator(gen, output_signature=lib.TensorSpec([1], lib.float32))
    strategy = lib.distribute.MirroredStrategy(["/cpu:0"])
    return [x.numpy().tolist() for x in strategy.experimental_distribute_dataset(dataset)]


def test_one_replica_takes_an_unbatched_dataset_as_tensorflow_does(tf):
    assert _unbatched_elements(tf) == [[0.0], [1.0], [2.0], [3.0]]
    assert _unbatched_elements(tensorflow_or_skip()) == _unbatched_elements(tf)
