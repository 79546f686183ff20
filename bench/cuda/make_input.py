"""Why: the --input/--output run of a device visit needs x at the
tutorial's shape without PyTorch or NumPy on the GPU host: a safetensors
file of BF16 x, (batch, seq, dim), uniform(-1, 1) values, written with the
standard library only.
Usage: make_input.py OUT BATCH SEQ DIM"""
import json
import random
import struct
import sys


def main():
    out, batch, seq, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(0)
    # 4096 distinct values, tiled: enough variety, and fast in pure Python
    tile = b"".join(struct.pack("<f", rng.uniform(-1, 1) or 0.25)[2:] for _ in range(4096))
    n = batch * seq * dim
    data = (tile * (n // 4096 + 1))[: 2 * n]
    header = json.dumps({"x": {"dtype": "BF16", "shape": [batch, seq, dim], "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(data)


if __name__ == "__main__":
    main()
