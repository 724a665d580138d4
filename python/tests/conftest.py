"""Shared fixtures of lockstep's Python tests: the package under test is build/python (make build puts it on the
venv's path), the CLI is $LOCKSTEP_BIN_DIR/lockstep."""
import atexit
import os
import pathlib
import shutil
import tempfile

import pytest

# Everything a test or a library under test writes to the temporary directory (pytest's tmp_path, TensorFlow's
# autograph files, the workers a test starts) goes into one directory removed when the session ends.
# A session that was killed (ctest's timeout) cannot remove its own: the next one removes those whose process is gone.
def _remove_orphans(root, prefix):
    for path in pathlib.Path(root).glob(prefix + "*"):
        pid = path.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(path, ignore_errors=True)


_PREFIX = "lockstep-pytest-"
_remove_orphans(tempfile.gettempdir(), _PREFIX)
_TMP = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
os.environ["TMPDIR"] = tempfile.tempdir = _TMP
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN_DIR = pathlib.Path(os.environ.get("LOCKSTEP_BIN_DIR", REPO / "build" / "bin"))


def tensorflow_or_skip():
    """TensorFlow from build/venv, for agreement tests; the skip says why it is missing."""
    unavailable = REPO / "build" / "venv" / "UNAVAILABLE"
    try:
        import tensorflow as tf  # noqa: F401
    except ImportError:
        reason = unavailable.read_text().strip() if unavailable.exists() else "tensorflow is not installed in this venv"
        pytest.skip(f"TensorFlow agreement test skipped: {reason}")
    return tf


@pytest.fixture
def tf():
    import lockstep

    return lockstep
