"""tf.train: Checkpoint, CheckpointManager and latest_checkpoint over lockstep's C++ checkpoints (safetensors files,
docs/api.md), and the re-exported ClusterSpec and tf.Example protos.

An object is checkpointable when it is a tf.Variable, a nested tf.train.Checkpoint, a _lockstep.train.Trackable,
has a method _lockstep_trackable() returning one (Keras models and optimizers do), or is a list, tuple or dict of
checkpointable objects.
"""
import atexit as _atexit
import importlib as _importlib
import types as _types
import weakref as _weakref

from . import _lockstep, _unimplemented

_cc = _lockstep.train


def _trackable_of(value):
    """The C++ Trackable that saves `value`, or None when it is not checkpointable."""
    if isinstance(value, _cc.Trackable):
        return value
    if isinstance(value, _lockstep.Variable):
        return _cc.variable_trackable(value)
    make = getattr(type(value), "_lockstep_trackable", None)
    if make is not None:
        return make(value)
    # Lists, tuples and dicts of checkpointable objects, as TF tracks them: items under their index or key.
    if isinstance(value, (list, tuple)):
        items = [(str(i), item) for i, item in enumerate(value)]
    elif isinstance(value, dict) and all(isinstance(key, str) for key in value):
        items = list(value.items())
    else:
        return None
    trackables = [(name, _trackable_of(item)) for name, item in items]
    if not trackables or any(t is None for _, t in trackables):
        return None
    return _cc.nested_trackable(trackables)


class CheckpointOptions:
    """tf.train.CheckpointOptions. Of its options lockstep has the background write
    (experimental_enable_async_checkpoint); the others name devices and sharding lockstep does not have."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, experimental_skip_slot_variables=False,
                 experimental_sharding_callback=None):
        for name, value in (("experimental_io_device", experimental_io_device),
                            ("experimental_write_callbacks", experimental_write_callbacks),
                            ("experimental_sharding_callback", experimental_sharding_callback)):
            if value is not None:
                raise NotImplementedError(_unimplemented.message(f"tf.train.CheckpointOptions({name}=...)"))
        if experimental_skip_slot_variables:
            raise NotImplementedError(
                _unimplemented.message("tf.train.CheckpointOptions(experimental_skip_slot_variables=True)"))
        self.experimental_enable_async_checkpoint = bool(experimental_enable_async_checkpoint or enable_async)
        self.enable_async = self.experimental_enable_async_checkpoint


class _LoadStatus:
    """What a restore matched. The assertions raise AssertionError, as TensorFlow's do, with lockstep's message."""

    def __init__(self, status):
        self._status = status

    def _check(self, assertion):
        try:
            assertion()
        except ValueError as e:
            raise AssertionError(str(e)) from None
        return self

    def assert_consumed(self):
        return self._check(self._status.assert_consumed)

    def assert_existing_objects_matched(self):
        return self._check(self._status.assert_existing_objects_matched)

    def expect_partial(self):
        self._status.expect_partial()
        return self

    # Eager restores are done when restore() returns: there are no restore ops to run or initializers to call.
    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        pass


class Checkpoint:
    """tf.train.Checkpoint(root=None, **kwargs): saves and restores the objects given as keyword arguments (and
    `root`, under that name) and those later assigned as attributes, until the first save or restore; from then on
    the set of objects is fixed (the C++ checkpoint holds it, with save_counter)."""

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_objects", {})
        object.__setattr__(self, "_cc", None)
        if root is not None:
            kwargs = {"root": root, **kwargs}
        for name, value in kwargs.items():
            if _trackable_of(value) is None:
                raise ValueError(f"`Checkpoint` was expecting {name} to be a trackable object (a tf.Variable, a "
                                 f"Keras model or optimizer, or a tf.train.Checkpoint), got {value!r}.")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        trackable = not name.startswith("_") and _trackable_of(value) is not None
        if trackable or name in self._objects:
            if self._cc is not None:
                raise ValueError(f"tf.train.Checkpoint: cannot set object '{name}' after the checkpoint was saved "
                                 "or restored; lockstep's checkpoint takes its objects before that: pass it to "
                                 "tf.train.Checkpoint(...)")
            if trackable:
                self._objects[name] = value
            else:
                del self._objects[name]
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._objects:
            self.__setattr__(name, None)
        object.__delattr__(self, name)

    def _trackables(self):
        return [(name, _trackable_of(value)) for name, value in self._objects.items()]

    def _lockstep_trackable(self):
        """This checkpoint nested in another: its objects under their names."""
        return _cc.nested_trackable(self._trackables())

    def _checkpoint(self):
        """The C++ checkpoint, made at the first save or restore from the objects given until then."""
        if self._cc is None:
            object.__setattr__(self, "_cc", _cc.Checkpoint(self._trackables()))
        return self._cc

    def _for_save(self, options):
        """The C++ checkpoint, set to write in the background or not as this save's options say (TF takes the
        option save by save)."""
        checkpoint = self._checkpoint()
        asynchronous = bool(options is not None and options.experimental_enable_async_checkpoint)
        checkpoint.set_async(asynchronous)
        if asynchronous:
            _async_checkpoints.add(self)
        return checkpoint

    @property
    def save_counter(self):
        """How many times save() ran, as TF's int64 variable of that name; the count lives in the C++
        checkpoint, so assigning to the variable changes nothing."""
        count = self._cc.save_counter if self._cc is not None else 0
        return _lockstep.Variable(count, trainable=False, name="save_counter", dtype="int64")

    def save(self, file_prefix, options=None):
        return self._for_save(options).save(_path(file_prefix))

    def write(self, file_prefix, options=None):
        return self._for_save(options).write(_path(file_prefix))

    def restore(self, save_path, options=None):
        return self._deferring(self._checkpoint().restore(_path(save_path) if save_path is not None else ""))

    def read(self, save_path, options=None):
        return self._deferring(self._checkpoint().read(_path(save_path) if save_path is not None else ""))

    def _deferring(self, status):
        """The load status, once the values nothing took are held by the tf.Modules on their paths: a variable
        added there later takes its saved value then (TF's deferred restoration), and counts as restored."""
        from ._module import Module, defer_restore

        unused = [entry for entry in status.unused if isinstance(self._objects.get(entry.split("/")[0]), Module)]
        if unused:
            import os

            saved = dict(_cc.load_checkpoint_file(_checkpoint_file(status.path))[0]) if os.path.exists(
                _checkpoint_file(status.path)) else {}
            for entry in unused:
                top, _, rest = entry.partition("/")
                if entry in saved and rest:
                    defer_restore(self._objects[top], rest, saved[entry], status, entry)
        return _LoadStatus(status)

    def sync(self):
        if self._cc is not None:
            self._cc.sync()


# Python does not free what a program still holds at exit: a background write still in flight then is waited
# for here, as TF's async checkpoint does, so the last save is not lost.
_async_checkpoints = _weakref.WeakSet()
_atexit.register(lambda: [checkpoint.sync() for checkpoint in list(_async_checkpoints)])


def _path(path):
    """A path as TF takes it: a string, bytes or os.PathLike."""
    import os

    path = os.fspath(path)
    return path.decode() if isinstance(path, bytes) else path


class CheckpointManager:
    """tf.train.CheckpointManager: numbered saves of a Checkpoint in `directory`, its `checkpoint` index file (TF's)
    and the max_to_keep / keep_checkpoint_every_n_hours policy."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None,
                 last_checkpoint_step=None):
        if last_checkpoint_step is not None:
            raise NotImplementedError(
                _unimplemented.message("tf.train.CheckpointManager(last_checkpoint_step=...)"))
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager needs a tf.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep <= 0):
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if step_counter is not None and not isinstance(step_counter, _lockstep.Variable):
            counter = step_counter
            step_counter = lambda: int(counter)  # noqa: E731
        self._checkpoint = checkpoint
        self._checkpoint_interval = checkpoint_interval
        self._cc = _cc.CheckpointManager(checkpoint._checkpoint(), _path(directory), max_to_keep,
                                         keep_checkpoint_every_n_hours, checkpoint_name, step_counter,
                                         None if checkpoint_interval is None else int(checkpoint_interval), init_fn)

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def directory(self):
        return self._cc.directory

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        return self._cc.latest_checkpoint

    @property
    def checkpoints(self):
        return self._cc.checkpoints

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        self._checkpoint._for_save(options)
        number = None if checkpoint_number is None else int(checkpoint_number)
        return self._cc.save(number, check_interval)

    def restore_or_initialize(self):
        return self._cc.restore_or_initialize()

    def sync(self):
        self._cc.sync()


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The checkpoint prefix that `checkpoint_dir`'s `checkpoint` index file names, or None. Unlike TensorFlow's,
    where the index is missing, garbled or names a file that is gone or damaged, it warns (on stderr) and returns the
    newest valid checkpoint in the directory instead of None (docs/fault-tolerance.md)."""
    if latest_filename not in (None, "checkpoint"):
        raise NotImplementedError(_unimplemented.message("tf.train.latest_checkpoint(latest_filename=...)"))
    return _cc.latest_checkpoint(_path(checkpoint_dir))


# Made by other modules of the package: looked up when first used.
def _checkpoint_file(ckpt_dir_or_file):
    """The safetensors file of a checkpoint given as its prefix (what save() returned), its file, or a directory
    (its latest checkpoint)."""
    import os

    path = _path(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            from .errors import NotFoundError

            raise NotFoundError(None, None, f"no checkpoint in directory {path!r} (it has no 'checkpoint' index "
                                            "naming one): give a checkpoint's path, as save() returned it")
        path = latest
    return path if path.endswith(".safetensors") else path + ".safetensors"


class CheckpointReader:
    """tf.train.load_checkpoint's reader: the tensors a checkpoint file holds, under lockstep's names (a
    variable's path of attributes: `model/dense/kernel`, where TensorFlow writes
    `model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`). save_counter is one of them, as in TF."""

    def __init__(self, ckpt_dir_or_file):
        self._path = _checkpoint_file(ckpt_dir_or_file)
        tensors, metadata = _cc.load_checkpoint_file(self._path)
        self._tensors = dict(tensors)
        if "save_counter" in metadata and "save_counter" not in self._tensors:
            self._tensors["save_counter"] = _lockstep.ops.convert_to_tensor(int(metadata["save_counter"]),
                                                                            _lockstep.DType.int64, None)

    def get_variable_to_shape_map(self):
        return {name: list(t._shape_tuple) for name, t in self._tensors.items()}

    def get_variable_to_dtype_map(self):
        return {name: t.dtype for name, t in self._tensors.items()}

    def has_tensor(self, name):
        return name in self._tensors

    def get_tensor(self, name):
        if name not in self._tensors:
            from .errors import NotFoundError

            raise NotFoundError(None, None, f"Key {name} not found in checkpoint {self._path}; it has: "
                                            f"{', '.join(sorted(self._tensors))}")
        return self._tensors[name].numpy()


def load_checkpoint(ckpt_dir_or_file):
    return CheckpointReader(ckpt_dir_or_file)


def list_variables(ckpt_dir_or_file):
    """(name, shape) of every tensor in the checkpoint, sorted by name as TF's."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file, name):
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


_REEXPORTS = {"ClusterSpec": "lockstep.distribute.cluster_resolver", "Example": "lockstep.io._example",
              "Features": "lockstep.io._example", "Feature": "lockstep.io._example",
              "BytesList": "lockstep.io._example", "FloatList": "lockstep.io._example",
              "Int64List": "lockstep.io._example"}

experimental = _types.ModuleType(f"{__name__}.experimental", "tf.train.experimental: nothing of it yet.")
_unimplemented.install(experimental.__dict__, "tf.train.experimental")
_unimplemented.install(globals(), "tf.train")
_missing = globals().pop("__getattr__")


def _import(path):
    """The module at a dotted path, or the attribute of that name of its parent (a namespace object)."""
    try:
        return _importlib.import_module(path)
    except ModuleNotFoundError:
        parent, _, attribute = path.rpartition(".")
        return getattr(_importlib.import_module(parent), attribute)


def __getattr__(name):
    module_name = _REEXPORTS.get(name)
    if module_name is None:
        return _missing(name)
    try:
        value = getattr(_import(module_name), name)
    except (ImportError, AttributeError, NotImplementedError):
        raise NotImplementedError(_unimplemented.message(f"tf.train.{name}")) from None
    globals()[name] = value
    return value
