#!/usr/bin/env python3
"""Writes the first N training / M test images of the Debian Fashion-MNIST package as IDX .gz files into
.gpu-data/fashion-mnist (git-ignored, ~1 MB), to carry to the GPU machine for the tests that train there
(scripts/gpu_check.sh links it to /usr/share/datasets/fashion-mnist).
Usage: python3 scripts/gpu_fmnist_subset.py [N_TRAIN] [N_TEST]   (defaults 2000 500)"""
import gzip
import pathlib
import struct
import sys

SRC = pathlib.Path("/usr/share/datasets/fashion-mnist")
DST = pathlib.Path(__file__).resolve().parent.parent / ".gpu-data" / "fashion-mnist"


def head(name: str, n: int) -> None:
    data = gzip.open(SRC / name).read()
    magic = struct.unpack(">I", data[:4])[0]
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    per_item = 1
    for d in dims[1:]:
        per_item *= d
    body = data[4 + 4 * ndim : 4 + 4 * ndim + n * per_item]
    with gzip.open(DST / name, "wb") as f:
        f.write(struct.pack(">I", magic) + struct.pack(">" + "I" * ndim, n, *dims[1:]) + body)


def main() -> None:
    n_train = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    n_test = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    DST.mkdir(parents=True, exist_ok=True)
    for kind, n in (("train", n_train), ("t10k", n_test)):
        head(f"{kind}-images-idx3-ubyte.gz", n)
        head(f"{kind}-labels-idx1-ubyte.gz", n)
    print(f"wrote {n_train} train / {n_test} test images to {DST}")


if __name__ == "__main__":
    main()
