"""Makes tests/golden/example_messages.json: tf.train.Example and the messages inside it as TensorFlow writes them,
each message's deterministic wire bytes and its text (str(message)), for the corner cases a hand-made codec gets
wrong: empty lists that keep their kind, a Feature with no kind, an Example with empty Features, extreme int64s,
float32 values whose shortest text needs 7 to 9 digits, bytes that need escaping, a non-ASCII key.
tests/data/example_values_test.cc and python/tests/test_example_messages.py compare lockstep's codec with these.

Generated with TensorFlow 2.21.0 (protobuf 7.36, upb). Rerun from the source root:
    build/venv/bin/python3 tests/golden/make_example_golden.py
"""
import base64
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import google.protobuf
import tensorflow as tf

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "example_messages.json")
T = tf.train


def messages():
    """(name, message) pairs; the names are what the tests look them up by."""
    floats = [0.1, 1.0, 2.5, -0.0, 1e-10, 3.4e38, 1.1234567, 16777217.0, 123456789.0, float("inf"), float("-inf")]
    mixed = T.Features(feature={
        "label": T.Feature(int64_list=T.Int64List(value=[1 << 40, -1])),
        "image": T.Feature(float_list=T.FloatList(value=[0.25 * k for k in range(6)])),
        "name": T.Feature(bytes_list=T.BytesList(value=[b"rec-1\x00\xff"])),
        "empty_bytes": T.Feature(bytes_list=T.BytesList()),
        "empty_floats": T.Feature(float_list=T.FloatList()),
        "empty_ints": T.Feature(int64_list=T.Int64List()),
        "no_kind": T.Feature(),
        "cl\u00e9": T.Feature(int64_list=T.Int64List(value=[7])),
    })
    return [
        ("example", T.Example(features=mixed)),
        ("example_empty_features", T.Example(features=T.Features())),
        ("example_empty", T.Example()),
        ("features", mixed),
        ("feature_no_kind", T.Feature()),
        ("feature_empty_bytes", T.Feature(bytes_list=T.BytesList())),
        ("feature_empty_floats", T.Feature(float_list=T.FloatList())),
        ("feature_empty_ints", T.Feature(int64_list=T.Int64List())),
        ("feature_ints", T.Feature(int64_list=T.Int64List(value=[-2**63, 2**63 - 1, 0, -1, 300]))),
        ("float_list", T.FloatList(value=floats)),
        ("int64_list", T.Int64List(value=[-2**63, 2**63 - 1, 0, -1, 300])),
        ("bytes_list", T.BytesList(value=[b"a\nb\r\t'\"\\\x00\x1f\x7f\xff" + "\u00e9".encode(), b""])),
    ]


def main():
    out = {"tensorflow": tf.__version__, "protobuf": google.protobuf.__version__, "messages": []}
    for name, m in messages():
        out["messages"].append({"name": name, "type": type(m).__name__,
                                "wire": base64.b64encode(m.SerializeToString(deterministic=True)).decode(),
                                "text": str(m)})
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
