"""`python3 -m venv v && v/bin/pip install .` from the repository root gives a working lockstep package and CLI
(deliverable 1 of issue 22). PyPI must be reachable for pip's build requirements (scikit-build-core, nanobind);
without it the test skips and says so."""
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from conftest import REPO


def pypi_reachable():
    try:
        urllib.request.urlopen("https://pypi.org/simple/nanobind/", timeout=10).close()
        return True
    except OSError:
        return False


def test_pip_install_from_the_repository_root(tmp_path):
    if not pypi_reachable():
        pytest.skip("pip install . needs PyPI for scikit-build-core and nanobind, and https://pypi.org is unreachable")
    venv = tmp_path / "v"
    subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True, timeout=120)
    # make's compiler (pip's own default is Python's x86_64-linux-gnu-g++), so that ccache serves the objects
    # `make build` compiled (pyproject.toml's build-dir): 30 s instead of 4-5 minutes on a cold CI machine.
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    env.setdefault("CC", "cc")
    env.setdefault("CXX", "c++")
    r = subprocess.run([venv / "bin" / "pip", "install", "--quiet", str(REPO)], capture_output=True, text=True,
                       timeout=1500, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    probe = ("import lockstep as tf, numpy as np; "
             "print(tf.__version__, float(tf.reduce_sum(tf.constant(np.arange(4.0, dtype=np.float32)))))")
    out = subprocess.run([venv / "bin" / "python", "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    import lockstep

    assert out.stdout.split() == [lockstep.__version__, "6.0"]
    cli = subprocess.run([venv / "bin" / "lockstep", "--version"], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0 and lockstep.__version__ in cli.stdout
    shutil.rmtree(venv)


def test_a_cpu_below_the_build_baseline_is_refused_at_import():
    """Told the CPU lacks AVX2, `import lockstep` raises one ImportError naming it, before the module (compiled
    for x86-64-v3) is loaded; the real CPU imports."""
    env = dict(os.environ, LOCKSTEP_CPU_PRETEND_MISSING="avx2")
    r = subprocess.run([sys.executable, "-c", "import lockstep"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: lockstep: this CPU lacks") and "avx2" in last, r.stderr
    ok = subprocess.run([sys.executable, "-c", "import lockstep"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
