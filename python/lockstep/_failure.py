"""A worker started by `lockstep launch` tells it how it failed: an uncaught exception is reported (its class and
the task it blames) through the launcher's failure pipe before Python prints it, so the launcher names the right
worker and knows an input error (ValueError: no restart) from a crash."""
import os
import sys

from . import _lockstep


def _install():
    if "LOCKSTEP_FAILURE_PIPE" not in os.environ:
        return
    previous = sys.excepthook

    def hook(kind, value, traceback):
        if not issubclass(kind, KeyboardInterrupt):
            _lockstep._report_failure(kind.__name__, str(getattr(value, "culprit", "") or ""))
        previous(kind, value, traceback)

    sys.excepthook = hook


_install()
