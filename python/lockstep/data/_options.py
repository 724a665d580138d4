"""tf.data.Options and the option groups under it, with TensorFlow's names and defaults.

lockstep's pipeline reads experimental_distribute.auto_shard_policy (how the strategies split the data among
workers). The other options tune TF's runtime (threads, graph optimizations) and change no element; they are kept
and merged as TF does, so programs that set them run unchanged.
"""
import enum


class AutoShardPolicy(enum.IntEnum):
    """tf.data.experimental.AutoShardPolicy, with TensorFlow's values."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class _OptionGroup:
    """Attributes with defaults; setting an unknown one is an AttributeError (as TF's options), and merge() lets
    the attributes set on the newer object win."""

    _defaults = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._values:
            return self._values[name]
        defaults = type(self)._defaults
        if name in defaults:
            value = defaults[name]
            if isinstance(value, type):  # a nested group, made on first use
                value = value()
                self._values[name] = value
            return value
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name not in type(self)._defaults:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        if isinstance(type(self)._defaults[name], type):
            raise AttributeError(f"{type(self).__name__}.{name} is a group of options; set its attributes instead")
        self._values[name] = self._check(name, value)

    def _check(self, name, value):
        return value

    def merge(self, other):
        out = type(self)()
        for source in (self, other):
            for name, value in source._values.items():
                if isinstance(value, _OptionGroup):
                    mine = out._values.get(name)
                    out._values[name] = mine.merge(value) if mine is not None else value.merge(type(value)())
                else:
                    out._values[name] = value
        return out

    def __eq__(self, other):
        return type(self) is type(other) and self._values == other._values

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in sorted(self._values.items()))})"


class DistributeOptions(_OptionGroup):
    """tf.data.experimental.DistributeOptions."""

    _defaults = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}

    def _check(self, name, value):
        if name == "auto_shard_policy":
            try:
                return AutoShardPolicy(value)
            except ValueError:
                raise ValueError(f"auto_shard_policy must be a tf.data.experimental.AutoShardPolicy (OFF, AUTO, FILE, "
                                 f"DATA), got {value!r}") from None
        return value


class ThreadingOptions(_OptionGroup):
    """tf.data.ThreadingOptions: lockstep's pipeline threads are its prefetch stages; these are kept, not used."""

    _defaults = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


class OptimizationOptions(_OptionGroup):
    """tf.data.experimental.OptimizationOptions: TF's graph rewrites, which lockstep's pipeline does not make."""

    _defaults = {"apply_default_optimizations": None, "filter_fusion": None, "filter_parallelization": None,
                 "inject_prefetch": None, "map_and_batch_fusion": None, "map_and_filter_fusion": None,
                 "map_fusion": None, "map_parallelization": None, "noop_elimination": None,
                 "parallel_batch": None, "seq_interleave_prefetch": None, "shuffle_and_repeat_fusion": None}


class AutotuneOptions(_OptionGroup):
    """tf.data.experimental.AutotuneOptions."""

    _defaults = {"enabled": None, "cpu_budget": None, "ram_budget": None, "autotune_algorithm": None,
                 "initial_parallelism": None, "min_parallelism": None}


class Options(_OptionGroup):
    """tf.data.Options."""

    _defaults = {"deterministic": None, "experimental_deterministic": None, "experimental_distribute":
                 DistributeOptions, "experimental_optimization": OptimizationOptions, "threading": ThreadingOptions,
                 "autotune": AutotuneOptions, "experimental_slack": None, "experimental_external_state_policy": None,
                 "experimental_symbolic_checkpoint": None, "experimental_warm_start": None, "dataset_name": None,
                 "framework_type": None, "experimental_threading": ThreadingOptions}
