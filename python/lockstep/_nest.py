"""tf.nest for the structures programs pass around: lists, tuples, dicts (in sorted key order, as TF) and leaves."""


def _is_sequence(x):
    return isinstance(x, (list, tuple, dict)) and not hasattr(x, "_lockstep_leaf")


def flatten(structure, expand_composites=False):
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    flat = list(flat_sequence)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple) and hasattr(s, "_fields"):  # namedtuple
            return type(s)(*[build(v) for v in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(v) for v in s)
        return flat.pop(0)

    return build(structure)


def map_structure(func, *structures, **kwargs):
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*flats)])


def is_nested(seq):
    return _is_sequence(seq)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    if len(flatten(nest1)) != len(flatten(nest2)):
        raise ValueError(f"The two structures don't have the same number of elements: {nest1} and {nest2}")
