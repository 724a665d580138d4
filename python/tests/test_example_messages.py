"""tf.train.Example's messages (lockstep.io._example, over the C++ codec) against the bytes and text TensorFlow wrote
for them (tests/golden/example_messages.json, from tests/golden/make_example_golden.py), without TensorFlow."""
import base64
import json

import pytest

from conftest import REPO
from lockstep.io import _example as pb

GOLDEN = {m["name"]: m for m in json.loads((REPO / "tests" / "golden" / "example_messages.json").read_text())["messages"]}


def wire(name):
    return base64.b64decode(GOLDEN[name]["wire"])


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_messages_round_trip_to_tensorflows_bytes_and_text(name):
    golden = GOLDEN[name]
    message = getattr(pb, golden["type"]).FromString(wire(name))
    assert message.SerializeToString() == wire(name) and message.ByteSize() == len(wire(name))
    if golden["type"] in ("Example", "Features"):  # TF prints a map in its own order, lockstep in key order
        assert sorted(str(message).splitlines()) == sorted(golden["text"].splitlines())
    else:
        assert str(message) == golden["text"]


def test_messages_built_in_python_give_tensorflows_bytes():
    features = pb.Features(feature={
        "label": pb.Feature(int64_list=pb.Int64List(value=[1 << 40, -1])),
        "image": pb.Feature(float_list=pb.FloatList(value=[0.25 * k for k in range(6)])),
        "name": pb.Feature(bytes_list=pb.BytesList(value=[b"rec-1\x00\xff"])),
        "empty_bytes": pb.Feature(bytes_list=pb.BytesList()),
        "empty_floats": pb.Feature(float_list=pb.FloatList()),
        "empty_ints": pb.Feature(int64_list=pb.Int64List()),
        "no_kind": pb.Feature(),
        "cl\u00e9": pb.Feature(int64_list=pb.Int64List(value=[7])),
    })
    assert features.SerializeToString() == wire("features")
    assert pb.Example(features=features).SerializeToString() == wire("example")
    assert pb.Example(features=pb.Features()).SerializeToString() == wire("example_empty_features")
    assert pb.Example().SerializeToString() == b"" and not pb.Example.FromString(b"").HasField("features")
    assert pb.Feature(bytes_list=pb.BytesList()).SerializeToString() == wire("feature_empty_bytes")
    assert pb.Feature.FromString(wire("feature_empty_floats")).WhichOneof("kind") == "float_list"
    assert pb.Feature.FromString(wire("feature_no_kind")).WhichOneof("kind") is None
    assert pb.FloatList(value=[0.1]).value == [pb.FloatList.FromString(pb.FloatList(value=[0.1]).SerializeToString())
                                               .value[0]]  # held as float32, as protobuf holds it


def test_merge_and_copy_follow_protobuf():
    ex = pb.Example.FromString(wire("example"))
    ex.MergeFromString(pb.Example(features=pb.Features(feature={
        "label": pb.Feature(float_list=pb.FloatList(value=[2.0]))})).SerializeToString())
    assert ex.features.feature["label"].float_list.value == [2.0]  # a map entry parsed later wins
    ints = pb.Int64List(value=[1])
    ints.MergeFromString(pb.Int64List(value=[2, 3]).SerializeToString())
    assert ints.value == [1, 2, 3]  # repeated fields append
    copy = pb.Example()
    copy.CopyFrom(ex)
    assert copy == ex and copy.features is not ex.features


def test_bad_bytes_are_decode_errors_that_name_the_message():
    with pytest.raises(pb.DecodeError, match="tf.train.Features"):
        pb.Features.FromString(b"\x0a\x05ab")
    with pytest.raises(pb.DecodeError, match="tf.train.Int64List"):
        pb.Int64List().ParseFromString(b"\x0a\x05")
