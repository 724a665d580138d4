"""docs/python.md's list of supported symbols is what the package provides (python/tools/make_docs.py)."""
import subprocess
import sys

from conftest import REPO


def test_the_supported_symbols_in_the_docs_are_up_to_date():
    r = subprocess.run([sys.executable, REPO / "python" / "tools" / "make_docs.py", "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
