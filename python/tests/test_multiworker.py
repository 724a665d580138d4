"""MultiWorkerMirroredStrategy from Python across real processes on loopback: the same script under
`lockstep launch -n 2` and started by hand with TF_CONFIG, as the tutorials start it; a Python exception in one
worker ends the job naming that worker; a malformed TF_CONFIG is the CLI's one-line error."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import BIN_DIR, REPO

PYTHON = str(REPO / "build" / "venv" / "bin" / "python3") if (REPO / "build" / "venv").exists() else sys.executable
TIMEOUT = 120  # seconds any one job may take; they take a few

WORKER = textwrap.dedent("""
    import json, os
    import numpy as np
    import lockstep as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    task_id = resolver.task_id
    out = {"replicas": strategy.num_replicas_in_sync, "task_type": resolver.task_type, "task_id": task_id,
           "spec": resolver.cluster_spec().as_dict()}

    with strategy.scope():
        mirrored = tf.Variable([float(task_id), 1.0])  # every worker starts from the chief's value

    def per_worker():
        if os.environ.get("FAIL_IN_RUN") == str(task_id):
            raise ValueError("worker failed on purpose")
        return tf.constant([1.0, 2.0]) * float(task_id + 1)
    value = strategy.run(per_worker)
    if os.environ.get("FAIL_TASK") == str(task_id):
        raise ValueError("worker failed on purpose")
    out["sum"] = strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None).numpy().tolist()
    out["mean"] = strategy.reduce("MEAN", value, axis=0).numpy().tolist()
    out["gather"] = strategy.gather(value, axis=0).numpy().tolist()
    out["mirrored"] = mirrored.numpy().tolist()

    w = tf.Variable([1.0, 1.0])
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        (grad,) = tape.gradient(loss, [w])
        return tf.distribute.get_replica_context().all_reduce("SUM", grad)
    out["grad"] = strategy.run(step, args=(tf.constant([1.0, 2.0]) * float(task_id + 1),)).numpy().tolist()

    def mirrored_step(x):  # as an optimizer updates mirrored variables: reduced gradients, one update per worker
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(mirrored * x)
        (total,) = strategy._cpp.all_reduce_gradients(tape.gradient(loss, [mirrored]), [mirrored])
        tf.distribute.get_replica_context().merge_call(lambda s, g: mirrored.assign_sub(g), args=(total,))
    for _ in range(2):
        strategy.run(mirrored_step, args=(tf.constant([1.0, 2.0]) * float(task_id + 1),))
    out["updated"] = mirrored.numpy().tolist()

    x = np.arange(16, dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, x)).batch(8)
    total, steps = 0.0, 0
    for batch in strategy.experimental_distribute_dataset(ds):
        local = strategy.run(lambda b: tf.reduce_sum(b[0]), args=(batch,))
        total += float(strategy.reduce("SUM", local, axis=None).numpy())
        steps += 1
    out["dataset"] = [total, steps]
    print("RESULT " + json.dumps(out), flush=True)
""")


def free_ports(n):
    """n distinct loopback ports that were free a moment ago (held open together so none repeats)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_config(ports, index):
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})


def worker_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "FAIL_TASK", "FAIL_IN_RUN")}
    env.update(extra)
    return env


def run_group(commands, cwd):
    """Runs the processes side by side; returns [(returncode, output)] and how long they took. Leaves nothing
    running: each gets TIMEOUT seconds, then its whole process group is killed."""
    start = time.monotonic()
    procs = [subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) for cmd, env in commands]
    try:
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, TIMEOUT - (time.monotonic() - start)))
            results.append((p.returncode, out))
        return results, time.monotonic() - start
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def results(output):
    return [json.loads(line.split("RESULT ", 1)[1]) for line in output.splitlines() if "RESULT " in line]


def start(how, tmp_path, **extra):
    """The two-worker job, under the launcher or by hand with TF_CONFIG: [(returncode, output)], seconds."""
    script = tmp_path / "main.py"
    script.write_text(WORKER)
    if how == "launch":
        cmd = [str(BIN_DIR / "lockstep"), "launch", "-n", "2", "--grace-period", "5", "--", PYTHON, str(script)]
        return run_group([(cmd, worker_env(**extra))], tmp_path)
    ports = free_ports(2)
    return run_group([([PYTHON, str(script)], worker_env(TF_CONFIG=tf_config(ports, i), **extra)) for i in range(2)],
                     tmp_path)


@pytest.mark.parametrize("how", ["launch", "by_hand"])
def test_two_workers_reduce_across_processes(tmp_path, how):
    runs, _ = start(how, tmp_path)
    for code, out in runs:
        assert code == 0, out
    found = sorted((r for _, out in runs for r in results(out)), key=lambda r: r["task_id"])
    assert [r["task_id"] for r in found] == [0, 1], runs
    for r in found:
        assert r["replicas"] == 2 and r["task_type"] == "worker"
        assert len(r["spec"]["worker"]) == 2
        assert r["sum"] == [3.0, 6.0]  # worker 0 gave [1, 2], worker 1 [2, 4]
        assert r["mean"] == 2.25
        assert r["gather"] == [1.0, 2.0, 2.0, 4.0]
        assert r["mirrored"] == [0.0, 1.0]  # the chief's initial value
        assert r["grad"] == [3.0, 6.0]
        assert r["updated"] == [-6.0, -11.0]  # [0, 1] - 2 * [3, 6]
        assert r["dataset"] == [120.0, 2]  # each worker read half of every global batch; together all of it


@pytest.mark.parametrize("failing,where", [(0, "FAIL_TASK"), (1, "FAIL_TASK"), (1, "FAIL_IN_RUN")])
def test_a_python_exception_in_one_worker_ends_the_launched_job_naming_it(tmp_path, failing, where):
    ((code, out),), seconds = start("launch", tmp_path, **{where: str(failing)})
    assert code != 0
    assert "ValueError: worker failed on purpose" in out
    assert f"lockstep launch: worker {failing} failed" in out, out
    assert seconds < 60


def test_a_python_exception_in_one_worker_started_by_hand_stops_the_other(tmp_path):
    (w0, w1), seconds = start("by_hand", tmp_path, FAIL_TASK="1")
    assert w1[0] != 0 and "ValueError: worker failed on purpose" in w1[1]
    assert w0[0] != 0 and "worker:1" in w0[1], w0[1]
    assert seconds < 60


def test_a_worker_whose_peer_never_starts_gives_up_in_bounded_time_naming_it(tmp_path):
    script = tmp_path / "main.py"
    script.write_text(WORKER)
    env = worker_env(TF_CONFIG=tf_config(free_ports(2), 0), LOCKSTEP_STARTUP_TIMEOUT="3")
    ((code, out),), seconds = run_group([([PYTHON, str(script)], env)], tmp_path)
    assert code == 1 and seconds < 60
    assert "DeadlineExceededError" in out and "worker:1" in out.strip().splitlines()[-1], out


def test_a_malformed_tf_config_is_the_clis_one_line_error(tmp_path):
    bad = '{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 5}}'
    cli = subprocess.run([str(BIN_DIR / "lockstep"), "tf-config"], env=worker_env(TF_CONFIG=bad),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert cli.returncode == 2
    (cli_line,) = cli.stderr.strip().splitlines()
    script = tmp_path / "main.py"
    script.write_text(WORKER)
    ((code, out),), _ = run_group([([PYTHON, str(script)], worker_env(TF_CONFIG=bad))], tmp_path)
    assert code == 1
    last = out.strip().splitlines()[-1]
    assert last.startswith("ValueError: ")
    assert last[len("ValueError: "):] in cli_line
