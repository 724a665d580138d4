"""`python -m lockstep PROGRAM.py`: a TensorFlow program runs on lockstep with no line changed, every import form
resolving to lockstep, while a TensorFlow installed beside it stays untouched everywhere else."""
import subprocess
import sys

import pytest

from conftest import BIN_DIR, tensorflow_or_skip
from test_examples import EXAMPLES, datasets, environment, final_accuracy, run  # noqa: F401 (datasets: a fixture)

PROGRAM = """
import sys
import lockstep
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers, losses
from tensorflow.keras.layers import Dense
import tensorflow.keras.optimizers.schedules as schedules
import tf_keras
import keras as keras3
import numpy as np

assert tf is lockstep and keras is lockstep.keras and tf_keras is lockstep.keras and keras3 is lockstep.keras
assert layers is lockstep.keras.layers and losses is lockstep.keras.losses and Dense is lockstep.keras.layers.Dense
assert schedules is lockstep.keras.optimizers.schedules
assert lockstep.keras.__spec__.name == "lockstep.keras"  # its own spec, not the alias's
real = [name for name, m in sys.modules.items() if "site-packages/tensorflow" in (getattr(m, "__file__", None) or "")
        or "site-packages/keras" in (getattr(m, "__file__", None) or "")]
assert not real, real
model = keras.Sequential([layers.Input((4,)), Dense(2)])
model.compile("sgd", "mse")
model.fit(np.zeros((8, 4), np.float32), np.zeros((8, 2), np.float32), verbose=0)
print("argv", sys.argv[1:], "__name__", __name__)
"""


def lockstep_run(tmp_path, source, *args):
    program = tmp_path / "program.py"
    program.write_text(source)
    return subprocess.run([sys.executable, "-m", "lockstep", program, *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_every_import_form_resolves_to_lockstep(tmp_path):
    r = lockstep_run(tmp_path, PROGRAM, "--epochs", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "argv ['--epochs', '2'] __name__ __main__" in r.stdout


def test_a_name_lockstep_lacks_is_a_module_not_found_error_that_says_so(tmp_path):
    r = lockstep_run(tmp_path, "import tensorflow.python.framework.ops\n")
    assert r.returncode == 1
    assert ("No module named 'tensorflow.python': python -m lockstep runs it as lockstep.python, which lockstep does "
            "not implement") in r.stderr, r.stderr
    r = lockstep_run(tmp_path, "from tensorflow.keras.layers import NoSuchLayer\n")
    assert r.returncode == 1 and "NoSuchLayer" in r.stderr, r.stderr


def test_usage_and_a_missing_program_are_one_line_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lockstep"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "usage: python -m lockstep PROGRAM.py" in r.stderr
    r = subprocess.run([sys.executable, "-m", "lockstep", tmp_path / "missing.py"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "no such file" in r.stderr


def test_the_hook_refuses_to_start_after_tensorflow_was_imported():
    from lockstep import _import_hook

    sys.modules["tf_keras"] = object()
    try:
        with pytest.raises(ImportError, match="tf_keras is imported already"):
            _import_hook.install()
    finally:
        del sys.modules["tf_keras"]
    assert not any(isinstance(f, _import_hook.AliasFinder) for f in sys.meta_path)


def test_a_real_tensorflow_in_the_same_environment_is_not_touched():
    tensorflow_or_skip()
    code = "import lockstep, tensorflow, keras; print(tensorflow.__file__); print(keras.__file__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert all("site-packages" in line and "lockstep" not in line for line in r.stdout.splitlines()), r.stdout


def test_the_unchanged_tensorflow_tutorial_runs_on_two_workers(datasets, tmp_path):  # noqa: F811
    program = EXAMPLES / "tensorflow" / "multi_worker_keras.py"
    assert "import tensorflow as tf" in program.read_text()
    r = run([BIN_DIR / "lockstep", "launch", "-n", "2", "--", sys.executable, "-m", "lockstep", program],
            environment(datasets, tmp_path))
    assert r.returncode == 0, r.stderr[-4000:]
    assert 0.0 < final_accuracy(r.stdout) <= 1.0
