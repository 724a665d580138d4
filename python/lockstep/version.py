"""tf.version: lockstep's version (tf.__version__), and the versions of what it was compiled with."""
import platform as _platform

from . import _lockstep, _unimplemented

VERSION = _lockstep.__version__
GIT_VERSION = f"lockstep-{VERSION}"
COMPILER_VERSION = _platform.python_compiler()

_unimplemented.install(globals(), "tf.version")
