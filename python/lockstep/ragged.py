"""tf.ragged (filled in by issue 36)."""
from . import _unimplemented

_unimplemented.install(globals(), "tf.ragged")
