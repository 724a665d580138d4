"""The Python examples (examples/python: the seed tutorials written for lockstep) on one worker and on two under
`lockstep launch`, a worker killed mid-epoch that the job survives bit for bit, each example's TensorFlow form
differing from it in the import line only, and each reaching TensorFlow's accuracy from the same start."""
import importlib.util
import os
import pathlib
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import BIN_DIR, REPO

EXAMPLES = REPO / "examples" / "python"
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist (install-deps)
NAMES = ["multi_worker_ctl.py", "keras_multi_worker_notebook.py", "mirrored_custom_training.py",
         "multi_worker_keras.py"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """A LOCKSTEP_DATASETS directory: Fashion-MNIST's files, also standing in for MNIST (same IDX format, and
    MNIST itself is not in Debian nor downloadable here)."""
    if not FASHION.is_dir():
        pytest.skip(f"{FASHION} is missing: scripts/install-deps installs dataset-fashion-mnist")
    root = tmp_path_factory.mktemp("datasets")
    for name in ("mnist", "fashion-mnist"):
        (root / name).mkdir()
        for f in FASHION.glob("*-ubyte.gz"):
            (root / name / f.name).symlink_to(f)
    return root


def run(command, env, timeout=240):
    try:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, command))} did not finish within {timeout} s:\n{e.stderr}")


def environment(datasets, output_dir, **extra):
    env = dict(os.environ, LOCKSTEP_DATASETS=str(datasets), OUTPUT_DIR=str(output_dir), EPOCHS="1",
               STEPS_PER_EPOCH="8", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def final_accuracy(stdout):
    """The program's last 'final accuracy:' line (under lockstep launch each line starts with '[worker N] ')."""
    lines = [line.split("final accuracy:", 1)[1] for line in stdout.splitlines() if "final accuracy:" in line]
    assert lines, f"no 'final accuracy:' line in:\n{stdout}"
    return float(lines[-1])


@pytest.mark.parametrize("name", NAMES)
def test_the_tensorflow_form_differs_in_its_import_line_only(name):
    ours = (EXAMPLES / name).read_text().splitlines()
    theirs = (EXAMPLES / "tensorflow" / name).read_text().splitlines()
    assert len(ours) == len(theirs)
    differ = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert differ == [("import lockstep as tf", "import tensorflow as tf")]


@pytest.mark.parametrize("name", NAMES)
def test_runs_on_one_worker(name, datasets, tmp_path):
    r = run([sys.executable, EXAMPLES / name], environment(datasets, tmp_path))
    assert r.returncode == 0, r.stderr[-4000:]
    assert 0.0 < final_accuracy(r.stdout) <= 1.0


@pytest.mark.parametrize("name", NAMES)
def test_reaches_tensorflows_accuracy_from_the_same_start(name, datasets, tmp_path):
    """Both forms run under bench/python/same_start.py: TensorFlow's initial weights, no shuffle. What remains
    between the two accuracies is the frameworks' arithmetic (mirrored_custom_training.py trains a whole epoch)."""
    missing = [m for m in ("tensorflow", "tf_keras") if importlib.util.find_spec(m) is None]
    if missing:
        unavailable = REPO / "build" / "venv" / "UNAVAILABLE"
        reason = unavailable.read_text().strip() if unavailable.exists() else f"{', '.join(missing)} not in this venv"
        pytest.skip(f"TensorFlow agreement test skipped: {reason}")
    home = tmp_path / "home"
    keras_cache = home / ".keras" / "datasets" / "fashion-mnist"
    keras_cache.mkdir(parents=True)
    for f in FASHION.glob("*-ubyte.gz"):
        (keras_cache / f.name).symlink_to(f)
    weights = tmp_path / "initial"
    weights.mkdir()
    accuracy = {}
    for lib, program in (("tensorflow", EXAMPLES / "tensorflow" / name), ("lockstep", EXAMPLES / name)):
        env = environment(datasets, tmp_path / lib, STEPS_PER_EPOCH="20", HOME=str(home), TF_USE_LEGACY_KERAS="1",
                          TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="-1",
                          PYTHONPATH=str(REPO / "bench" / "python" / "tf_datasets"))
        r = run([sys.executable, REPO / "bench" / "python" / "same_start.py", lib, weights, program], env)
        assert r.returncode == 0, r.stderr[-4000:]
        accuracy[lib] = final_accuracy(r.stdout)
    assert list(weights.iterdir()), "no model's initial weights were shared"
    assert abs(accuracy["lockstep"] - accuracy["tensorflow"]) <= 0.01, accuracy


@pytest.mark.parametrize("name", ["multi_worker_ctl.py", "keras_multi_worker_notebook.py", "multi_worker_keras.py"])
def test_runs_on_two_workers_under_lockstep_launch(name, datasets, tmp_path):
    r = run([BIN_DIR / "lockstep", "launch", "-n", "2", "--", sys.executable, EXAMPLES / name],
            environment(datasets, tmp_path))
    assert r.returncode == 0, r.stderr[-4000:]
    assert 0.0 < final_accuracy(r.stdout) <= 1.0
    # The tutorials remove what a non-chief wrote (they rmtree its checkpoint or model directory); an empty
    # workertemp_<id> parent may stay, as it does under TensorFlow.
    left = [p for d in tmp_path.rglob("workertemp_*") for p in d.rglob("*") if p.is_file()]
    assert not left, f"a non-chief's files were left behind: {left}"


KILLER = """
import os, runpy, signal, sys
import lockstep as tf

# Worker 1 of the first attempt SIGKILLs itself after `step` training steps (a marker file makes it once only).
step, marker = int(os.environ["KILL_AT_STEP"]), os.environ["KILL_MARKER"]
fit = tf.keras.Model.fit

class Killer(tf.keras.callbacks.Callback):
    seen = 0
    def on_train_batch_end(self, batch, logs=None):
        Killer.seen += 1
        if Killer.seen == step and not os.path.exists(marker) and tf.distribute.get_strategy().cluster_resolver.task_id == 1:
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)

def fit_with_killer(self, *args, callbacks=None, **kwargs):
    return fit(self, *args, callbacks=list(callbacks or []) + [Killer()], **kwargs)

tf.keras.Model.fit = fit_with_killer
tf.random.set_seed(1234)  # the same initial weights and shuffle order in both runs
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_a_worker_killed_mid_epoch_resumes_to_the_weights_of_an_uninterrupted_run(datasets, tmp_path):
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    weights = {}
    for kind in ("uninterrupted", "killed"):
        out = tmp_path / kind
        env = environment(datasets, out, EPOCHS="2", STEPS_PER_EPOCH="6", KILL_AT_STEP="9" if kind == "killed" else "0",
                          KILL_MARKER=str(tmp_path / "killed.marker"))
        r = run([BIN_DIR / "lockstep", "launch", "-n", "2", "--max-restarts", "1", "--", sys.executable, script,
                 EXAMPLES / "multi_worker_keras.py"], env)
        assert r.returncode == 0, r.stderr[-4000:]
        import lockstep as tf

        weights[kind] = tf.keras.models.load_model(out / "model.keras").get_weights()
    assert (tmp_path / "killed.marker").exists(), "worker 1 was never killed"
    for a, b in zip(weights["uninterrupted"], weights["killed"]):
        np.testing.assert_array_equal(a, b)
