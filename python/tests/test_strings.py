"""tf.strings and tf.lookup: values against TensorFlow 2.21, and TF's errors for bad input."""
import random

import numpy as np
import pytest

from conftest import tensorflow_or_skip


def _np(t):
    return np.asarray(t.numpy())


CASES = [
    ("split_scalar", lambda tf: tf.strings.split("a  b c")),
    ("split_sep", lambda tf: tf.strings.split("1<>2<><>3", sep="<>")),
    ("split_max", lambda tf: tf.strings.split(" a b  c ", maxsplit=1)),
    ("split_empty", lambda tf: tf.strings.split("", sep=",")),
    ("substr", lambda tf: tf.strings.substr(["hello", "ab"], 1, 3)),
    ("substr_neg", lambda tf: tf.strings.substr(["hello"], -3, 2)),
    ("substr_utf8", lambda tf: tf.strings.substr(["héllo"], 1, 2, unit="UTF8_CHAR")),
    ("bytes_split", lambda tf: tf.strings.bytes_split("hé")),
    ("join", lambda tf: tf.strings.join([["a", "b"], "x"], separator="-")),
    ("length", lambda tf: tf.strings.length(["héllo", ""])),
    ("length_utf8", lambda tf: tf.strings.length(["héllo", ""], unit="UTF8_CHAR")),
    ("lower", lambda tf: tf.strings.lower(["ÀBc"])),
    ("lower_utf8", lambda tf: tf.strings.lower(["ÀBc"], encoding="utf-8")),
    ("upper", lambda tf: tf.strings.upper(["abÀ"])),
    ("strip", lambda tf: tf.strings.strip([" \t a b \n"])),
    ("regex_replace", lambda tf: tf.strings.regex_replace(["aaa bab", "<br />x"], "a(b)?|<br />", r"<\1>")),
    ("regex_replace0", lambda tf: tf.strings.regex_replace(["abc"], "b", r"[\0]")),
    ("regex_once", lambda tf: tf.strings.regex_replace(["aaa"], "a", "x", replace_global=False)),
    ("regex_full_match", lambda tf: tf.strings.regex_full_match(["abc", "abcd"], "a.c")),
    ("to_number", lambda tf: tf.strings.to_number([" 1.5", "inf", "-3", "1e3", "0x10"])),
    ("to_number_int", lambda tf: tf.strings.to_number(["12", " 4 "], tf.int32)),
    ("as_string_f", lambda tf: tf.strings.as_string([3.1415926, 1e10, 1e-7])),
    ("as_string_i", lambda tf: tf.strings.as_string([3, -2], width=5, fill="0")),
    ("as_string_sci", lambda tf: tf.strings.as_string([31.5], scientific=True)),
    ("as_string_short", lambda tf: tf.strings.as_string([31.5, 1e20], shortest=True)),
    ("as_string_prec", lambda tf: tf.strings.as_string([31.5], precision=3)),
    ("as_string_bool", lambda tf: tf.strings.as_string([True, False])),
    ("format", lambda tf: tf.strings.format("x={} y={}", (tf.constant([1, 2]), tf.constant("s")))),
    ("format_2d", lambda tf: tf.strings.format("x={}", tf.constant([[1.5, 2], [3, 4]]))),
    ("format_long", lambda tf: tf.strings.format("x={}", tf.range(10))),
    ("format_str", lambda tf: tf.strings.format("x={}", tf.constant(["a", "b"]))),
    ("reduce_join", lambda tf: tf.strings.reduce_join([["a", "b"], ["c", "d"]], axis=1, separator="-")),
    ("reduce_join_all", lambda tf: tf.strings.reduce_join([["a", "b"], ["c", "d"]])),
    ("reduce_join_keep", lambda tf: tf.strings.reduce_join([["a", "b"], ["c", "d"]], axis=0, keepdims=True)),
    ("unicode_decode", lambda tf: tf.strings.unicode_decode("héllo", "UTF-8")),
    ("unicode_decode_bad", lambda tf: tf.strings.unicode_decode(b"a\xffb\xe2\x82", "UTF-8")),
    ("unicode_decode_rc", lambda tf: tf.strings.unicode_decode(b"a\xffb", "UTF-8", replacement_char=63)),
    ("unicode_decode_ignore", lambda tf: tf.strings.unicode_decode(b"a\xffb", "UTF-8", errors="ignore")),
    ("unicode_decode_ctrl", lambda tf: tf.strings.unicode_decode(b"a\x01b", "UTF-8",
                                                                 replace_control_characters=True)),
    ("unicode_encode", lambda tf: tf.strings.unicode_encode([104, 233, 0x110000], "UTF-8")),
    ("unicode_encode_2d", lambda tf: tf.strings.unicode_encode([[104, 233], [65, 66]], "UTF-16-BE")),
    ("unicode_split", lambda tf: tf.strings.unicode_split("hé", "UTF-8")),
    ("unicode_transcode", lambda tf: tf.strings.unicode_transcode(["hé"], "UTF-8", "UTF-16-BE")),
    ("ngrams", lambda tf: tf.strings.ngrams(["a", "b", "c"], 2)),
    ("ngrams_pad", lambda tf: tf.strings.ngrams(["a", "b", "c"], 2, pad_values=("<s>", "</s>"))),
    ("ngrams_short", lambda tf: tf.strings.ngrams(["a", "b"], 3, preserve_short_sequences=True)),
    ("ngrams_multi", lambda tf: tf.strings.ngrams(["a", "b", "c"], (1, 2))),
    ("ngrams_2d", lambda tf: tf.strings.ngrams([["a", "b", "c"], ["d", "e", "f"]], 2)),
    ("ngrams_padw", lambda tf: tf.strings.ngrams(["a", "b", "c"], 3, pad_values="P", padding_width=1)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_agrees_with_tensorflow(tf, name, fn):
    real = tensorflow_or_skip()
    want, got = fn(real), fn(tf)
    assert got.dtype.name == want.dtype.name
    assert tuple(got.shape) == tuple(want.shape)
    w, g = _np(want), _np(got)
    if w.dtype.kind == "f":
        np.testing.assert_allclose(g, w)
    else:
        np.testing.assert_array_equal(g, w)


def test_split_in_a_dataset_map(tf):
    ds = tf.data.Dataset.from_tensor_slices(["1 2", "3 4 5"]).map(
        lambda line: tf.reduce_sum(tf.strings.to_number(tf.strings.split(line, " "))))
    assert [float(x) for x in ds] == [3.0, 12.0]


def test_hashes_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()
    rng = random.Random(1)
    data = [bytes(rng.randrange(256) for _ in range(n)) for n in list(range(0, 140)) + [1000]]
    buckets = 2**62 + 12345
    fast = tf.strings.to_hash_bucket_fast(tf.constant(data), buckets)
    assert fast.dtype == tf.int64
    np.testing.assert_array_equal(_np(fast), real.strings.to_hash_bucket_fast(real.constant(data), buckets).numpy())
    key = [0x0123456789ABCDEF, 0x7EDCBA9876543210]
    np.testing.assert_array_equal(_np(tf.strings.to_hash_bucket_strong(tf.constant(data), 1000, key)),
                                  real.strings.to_hash_bucket_strong(real.constant(data), 1000, key).numpy())


def test_non_scalar_split_is_ragged_or_says_so(tf):
    from lockstep import _ragged

    if hasattr(getattr(_ragged, "RaggedTensor", None), "from_row_splits"):
        real = tensorflow_or_skip()
        got, want = tf.strings.split(["a b", "c"]), real.strings.split(["a b", "c"])
        np.testing.assert_array_equal(_np(got.row_splits), want.row_splits.numpy())
        np.testing.assert_array_equal(_np(got.flat_values), want.flat_values.numpy())
    else:
        with pytest.raises(NotImplementedError, match="RaggedTensor"):
            tf.strings.split(["a b", "c"])


@pytest.mark.parametrize("call,error", [
    (lambda tf: tf.strings.to_number(["abc"]), "InvalidArgumentError"),
    (lambda tf: tf.strings.to_number(["1.5"], tf.int64), "InvalidArgumentError"),
    (lambda tf: tf.strings.to_number(["3000000000"], tf.int32), "InvalidArgumentError"),
    (lambda tf: tf.strings.substr(["hi"], 5, 1), "InvalidArgumentError"),
    (lambda tf: tf.strings.join([["a", "b"], ["x", "y", "z"]]), "InvalidArgumentError"),
    (lambda tf: tf.strings.unicode_decode(b"a\xffb", "UTF-8", errors="strict"), "InvalidArgumentError"),
    (lambda tf: tf.strings.regex_replace(["aaa"], "(", "x"), "InvalidArgumentError"),
    (lambda tf: tf.strings.upper(tf.constant([1])), "InvalidArgumentError"),
    (lambda tf: tf.strings.upper(1), "TypeError"),
    (lambda tf: tf.strings.length(["a"], unit="X"), "InvalidArgumentError"),
    (lambda tf: tf.strings.to_hash_bucket_fast(["a"], 0), "InvalidArgumentError"),
    (lambda tf: tf.strings.format("x={} {}", tf.constant(2.5)), "ValueError"),
])
def test_bad_input(tf, call, error):
    with pytest.raises(Exception) as info:
        call(tf)
    assert type(info.value).__name__ == error


# ---- tf.lookup ----

def _vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("emerson 10\nlake 20\npalmer 30\n")
    return str(path)


LOOKUPS = [
    ("static", lambda tf, f: tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [1, 2, 3]), -1).lookup(tf.constant([["a"], ["z"]]))),
    ("int_keys", lambda tf, f: tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer([1, 2], ["x", "y"]), "?").lookup(tf.constant([2, 5]))),
    ("vocab", lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
        ["a", "b", "c"], tf.constant([1, 2, 3], tf.int64)), 5).lookup(tf.constant(["a", "zz", "hello", "world"]))),
    ("vocab_int", lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant([10, 20], tf.int64), tf.constant([0, 1], tf.int64)), 7).lookup(tf.constant([10, 33], tf.int64))),
    ("vocab_size", lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
        ["a"], tf.constant([0], tf.int64)), 3).size()),
    ("text_whole", lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        f, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER), -1).lookup(
        tf.constant(["lake 20", "x"]))),
    ("text_cols", lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        f, tf.string, 0, tf.int64, 1, delimiter=" "), -1).lookup(tf.constant(["lake", "x", "palmer"]))),
    ("text_vocab", lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.TextFileInitializer(
        f, tf.string, 0, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER, delimiter=" "), 2).lookup(
        tf.constant(["lake", "x", "palmer"]))),
]


@pytest.mark.parametrize("name,fn", LOOKUPS, ids=[c[0] for c in LOOKUPS])
def test_lookup_agrees_with_tensorflow(tf, tmp_path, name, fn):
    real = tensorflow_or_skip()
    f = _vocab_file(tmp_path)
    want, got = fn(real, f), fn(tf, f)
    assert got.dtype.name == want.dtype.name
    np.testing.assert_array_equal(_np(got), want.numpy())


def test_mutable_hash_table(tf):
    m = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    m.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
    m.remove(tf.constant(["a"]))
    np.testing.assert_array_equal(_np(m.lookup(tf.constant(["a", "b"]))), [-1, 2])
    assert int(m.size()) == 1


@pytest.mark.parametrize("call,error", [
    (lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a"], [1]), -1).lookup(
        tf.constant([1])), TypeError),
    (lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a"], [1]), "x"), TypeError),
    (lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(["a"], [1]), 5), TypeError),
    (lambda tf, f: tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
        ["a"], tf.constant([1], tf.int64)), 0), ValueError),
    (lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        f, tf.string, 5, tf.int64, 1, delimiter=" "), -1), "InvalidArgumentError"),
    (lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        f + "x", tf.string, 0, tf.int64, 1), -1), "NotFoundError"),
    (lambda tf, f: tf.lookup.KeyValueTensorInitializer(["a", "b"], [1]), "InvalidArgumentError"),
    (lambda tf, f: tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "a"], [1, 2]), -1),
     "FailedPreconditionError"),
])
def test_lookup_bad_input(tf, tmp_path, call, error):
    with pytest.raises(Exception) as info:
        call(tf, _vocab_file(tmp_path))
    assert (type(info.value) is error) if isinstance(error, type) else type(info.value).__name__ == error
