"""python -m lockstep PROGRAM.py [ARGS] (or -m MODULE [ARGS]): runs a TensorFlow program on lockstep with no line
changed. `tensorflow`, `tensorflow.keras.*`, `tf_keras` and `keras` resolve to lockstep while it runs (see
_import_hook); the program sees sys.argv as `python PROGRAM.py ARGS` would give it."""
import os
import runpy
import sys

from . import _import_hook

USAGE = "usage: python -m lockstep PROGRAM.py [ARGS...]  or  python -m lockstep -m MODULE [ARGS...]"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    _import_hook.install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"python -m lockstep: -m needs a module name\n{USAGE}", file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    program = argv[0]
    if not os.path.isfile(program):
        print(f"python -m lockstep: cannot open {program!r}: no such file; give the path of a Python program",
              file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))  # as `python PROGRAM.py` puts its folder first
    runpy.run_path(program, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
