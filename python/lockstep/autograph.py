"""tf.autograph: lockstep runs a tf.function's Python as written (there is no graph to convert it into), so the
code that runs is the function's own source, and converting a function gives the function."""
import enum
import inspect
import sys
import textwrap

from . import _unimplemented

_verbosity = [0]


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source that runs for `entity`: its own (TF shows its AutoGraph rewrite; lockstep runs the original)."""
    function = getattr(entity, "python_function", entity)
    if not (inspect.isfunction(function) or inspect.ismethod(function)):
        raise ValueError(f"converting {entity!r}: Cannot apply autograph to a function that doesn't expose a "
                         "__code__ object. If this is a @tf.function, try passing f.python_function instead.")
    try:
        return textwrap.dedent(inspect.getsource(function))
    except OSError as e:
        raise ValueError(f"converting {entity!r}: its source is not available ({e})") from None


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """`entity` itself: lockstep's tf.function runs Python eagerly, so the function is already what runs in its
    place (TF returns a converted copy that builds graph ops)."""
    if not callable(entity):
        raise ValueError(f"converting {entity!r}: to_graph takes a function or a callable object")
    return getattr(entity, "python_function", entity)


def set_verbosity(level, alsologtostdout=False):
    """Recorded: lockstep converts nothing, so there is nothing to log."""
    _verbosity[0] = int(level)


def trace(*args):
    """Prints its arguments, as tf.autograph.trace does (at run time here: every call runs the Python)."""
    print(*args, file=sys.stdout)


class _Experimental:
    """tf.autograph.experimental."""

    class Feature(enum.Enum):
        ALL = "ALL"
        AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
        ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
        BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
        EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
        LISTS = "LISTS"
        NAME_SCOPES = "NAME_SCOPES"

    @staticmethod
    def do_not_convert(func=None):
        """The function as it is: lockstep converts no function, so every one is left alone."""
        if func is None:
            return lambda f: f
        return func

    @staticmethod
    def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                         shape_invariants=None):
        """No effect: the options are for the tf.while_loop AutoGraph would build, and lockstep runs the loop."""


experimental = _Experimental()

_unimplemented.install(globals(), "tf.autograph")
