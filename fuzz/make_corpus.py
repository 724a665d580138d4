#!/usr/bin/env python3
"""Writes the IDX and npz seed corpora (fuzz/corpus/idx, fuzz/corpus/npz): small valid files as MNIST's
downloads and numpy.savez write them, plus a few broken ones. Usage: fuzz/make_corpus.py fuzz/corpus"""
import gzip
import io
import struct
import sys
import zipfile
from pathlib import Path


def idx(dims, data):
    return struct.pack(">I", 0x800 + len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def npy(shape, data, descr="|u1", version=1):
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(str(d) for d in shape)
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims.rstrip(' ')}), }}"
    length_bytes = 2 if version == 1 else 4
    pad = (64 - (10 + (length_bytes - 2) + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + bytes(data)


def npz(members, compression=zipfile.ZIP_STORED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        for name, payload in members:
            z.writestr(name, payload)
    return out.getvalue()


def main(root):
    images = idx([2, 3, 4], range(24))
    files = {
        "idx/images_2x3x4": images,
        "idx/images_2x3x4.gz": gzip.compress(images, mtime=0),
        "idx/labels_5": idx([5], [0, 1, 2, 9, 3]),
        "idx/truncated": images[:-3],
        "idx/huge_dims": struct.pack(">IIII", 0x803, 60000, 0xFFFFFFFF, 0xFFFFFFFF),
        "idx/truncated.gz": gzip.compress(images, mtime=0)[:-6],
        "npz/stored.npz": npz([("x.npy", npy([2, 3], range(6))), ("y.npy", npy([2], [1, 0]))]),
        "npz/deflated.npz": npz([("x_train.npy", npy([4, 2, 2], range(16))), ("README", b"not an array")],
                                zipfile.ZIP_DEFLATED),
        "npz/version2.npz": npz([("a.npy", npy([3], [1, 2, 3], version=2))]),
        "npz/float_array.npz": npz([("f.npy", npy([1], [0, 0, 128, 63], descr="<f4"))]),
        "npz/bare.npy": npy([2, 2], [1, 2, 3, 4]),
        "npz/not_a_zip.npz": b"PK\x03\x04 this is not a zip archive",
    }
    for name, data in files.items():
        path = Path(root) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


if __name__ == "__main__":
    main(sys.argv[1])
