#!/usr/bin/env python3
"""Writes the PyTorch parity fixtures in tests/data/.

Why: issue 2's acceptance is that fmlp, given weights saved from a PyTorch
module, reproduces that module's output in every mode. These fixtures are the
PyTorch side of that check, produced once by real PyTorch so the test suite
(tests/test_torch_parity.c) needs no Python.

For each fixture NAME it writes
  NAME.safetensors      the module's state_dict, names exactly as PyTorch
                        writes them (gate_proj.weight ... / 0.weight, 0.bias ...)
  NAME_io.safetensors   x (batch, seq, dim) and y = module(x) from PyTorch eager
                        on the CPU; bf16 fixtures run the module in bf16
                        (module.to(torch.bfloat16)(x_bf16)), as a user would.
The prefixed fixture stores its MLP under "model.layers.0.mlp." next to
unrelated tensors and a decoy MLP under "model.layers.1.mlp.".

Safetensors is written here by hand (8-byte little-endian header length, JSON
header, raw little-endian data) because Debian ships no python3-safetensors.

Rerun (Debian's PyTorch, `apt-get install python3-torch python3-numpy`):
    /usr/bin/python3 tests/data/make_torch_fixtures.py
The output is deterministic for one PyTorch build and CPU; bf16 outputs may
differ in the last bit on another machine, well inside the test's bound.
"""
import json
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

ST_DTYPE = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)); act gelu-tanh is GeGLU, silu is SwiGLU."""

    def __init__(self, dim, hidden, act, bias):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=bias)
        self.up_proj = nn.Linear(dim, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, dim, bias=bias)
        self.act = act

    def forward(self, x):
        g = self.gate_proj(x)
        g = F.gelu(g, approximate="tanh") if self.act == "gelu_tanh" else F.silu(g)
        return self.down_proj(g * self.up_proj(x))


def stack(dims, act):
    """nn.Sequential(Linear, act, Linear, act, ..., Linear) with biases."""
    mods = []
    for i in range(len(dims) - 1):
        if i:
            mods.append(act())
        mods.append(nn.Linear(dims[i], dims[i + 1], bias=True))
    return nn.Sequential(*mods)


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float16:
        return t.numpy().astype("<f2").tobytes()
    return t.numpy().astype("<f4").tobytes()


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, tensor) in file order."""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors:
        b = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # pad so the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Reads back what write_safetensors wrote (self-check)."""
    import numpy as np

    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = data[a:b]
        if info["dtype"] == "BF16":
            i16 = torch.from_numpy(np.frombuffer(buf, dtype="<i2").copy())
            t = i16.view(torch.bfloat16)
        elif info["dtype"] == "F16":
            t = torch.from_numpy(np.frombuffer(buf, dtype="<f2").copy())
        else:
            t = torch.from_numpy(np.frombuffer(buf, dtype="<f4").copy())
        out[name] = t.reshape(info["shape"])
    return out


# name: (builder, dtype, (batch, seq), description)
FIXTURES = [
    ("geglu_f32", lambda: GatedMLP(64, 160, "gelu_tanh", False), torch.float32, (2, 5),
     "GeGLU (gelu tanh), dim 64, hidden 160, no bias"),
    ("geglu_bf16", lambda: GatedMLP(64, 160, "gelu_tanh", False), torch.bfloat16, (2, 5),
     "GeGLU (gelu tanh), dim 64, hidden 160, no bias"),
    ("swiglu_bias_f32", lambda: GatedMLP(40, 72, "silu", True), torch.float32, (3, 17),
     "SwiGLU (silu), dim 40, hidden 72, with biases"),
    ("swiglu_bias_bf16", lambda: GatedMLP(40, 72, "silu", True), torch.bfloat16, (3, 17),
     "SwiGLU (silu), dim 40, hidden 72, with biases"),
    ("seq_gelu_f32", lambda: stack([64, 160, 160, 64], nn.GELU), torch.float32, (2, 5),
     "Sequential(Linear 64->160, GELU, Linear 160->160, GELU, Linear 160->64), biases, exact GELU"),
    ("seq_gelu_bf16", lambda: stack([64, 160, 160, 64], nn.GELU), torch.bfloat16, (2, 5),
     "Sequential(Linear 64->160, GELU, Linear 160->160, GELU, Linear 160->64), biases, exact GELU"),
    ("seq_relu_f32", lambda: stack([40, 72, 72, 24], nn.ReLU), torch.float32, (3, 17),
     "Sequential(Linear 40->72, ReLU, Linear 72->72, ReLU, Linear 72->24), biases, out_dim != dim"),
    ("seq_relu_bf16", lambda: stack([40, 72, 72, 24], nn.ReLU), torch.bfloat16, (3, 17),
     "Sequential(Linear 40->72, ReLU, Linear 72->72, ReLU, Linear 72->24), biases, out_dim != dim"),
]

PREFIX = "model.layers.0.mlp."


def make(name, builder, dtype, bs, desc, seed):
    torch.manual_seed(seed)
    m = builder().eval()
    m = m.to(dtype)
    dim = next(iter(m.parameters())).shape[1]
    x = torch.randn(bs[0], bs[1], dim).to(dtype)
    with torch.inference_mode():
        y = m(x)
    sd = list(m.state_dict().items())
    meta = {"format": "pt", "fixture": name, "description": desc, "torch": torch.__version__}
    write_safetensors(os.path.join(HERE, name + ".safetensors"), sd, meta)
    write_safetensors(os.path.join(HERE, name + "_io.safetensors"), [("x", x), ("y", y)], meta)
    check(name, dict(sd), x, y)
    return m, x, y


def check(name, sd, x, y):
    w = read_safetensors(os.path.join(HERE, name + ".safetensors"))
    io = read_safetensors(os.path.join(HERE, name + "_io.safetensors"))
    assert set(w) == set(sd), (set(w), set(sd))
    for k in sd:
        assert torch.equal(w[k], sd[k]), k
    assert torch.equal(io["x"], x) and torch.equal(io["y"], y), name


def make_prefixed(seed):
    """GeGLU f32 under model.layers.0.mlp., among unrelated tensors and a decoy."""
    name = "prefix_geglu_f32"
    torch.manual_seed(seed)
    m = GatedMLP(64, 160, "gelu_tanh", False).eval()
    decoy = GatedMLP(64, 160, "gelu_tanh", False).eval()
    x = torch.randn(2, 5, 64)
    with torch.inference_mode():
        y = m(x)
    tensors = [
        ("model.embed_tokens.weight", torch.randn(32, 64)),
        ("model.layers.0.input_layernorm.weight", torch.ones(64)),
        ("model.layers.0.self_attn.q_proj.weight", torch.randn(64, 64)),
    ]
    tensors += [(PREFIX + k, v) for k, v in m.state_dict().items()]
    tensors += [("model.layers.1.mlp." + k, v) for k, v in decoy.state_dict().items()]
    tensors += [("model.norm.weight", torch.ones(64))]
    meta = {"format": "pt", "fixture": name, "prefix": PREFIX,
            "description": "GeGLU (gelu tanh) f32, dim 64, hidden 160, no bias, under " + PREFIX}
    write_safetensors(os.path.join(HERE, name + ".safetensors"), tensors, meta)
    write_safetensors(os.path.join(HERE, name + "_io.safetensors"), [("x", x), ("y", y)], meta)
    w = read_safetensors(os.path.join(HERE, name + ".safetensors"))
    for k, v in m.state_dict().items():
        assert torch.equal(w[PREFIX + k], v)


def main():
    torch.set_num_threads(1)  # one summation order, whatever the machine
    for i, (name, builder, dtype, bs, desc) in enumerate(FIXTURES):
        # f32 and bf16 twins share a seed: the same module, rounded to bf16
        make(name, builder, dtype, bs, desc, seed=1000 + i // 2)
        print(name, desc)
    make_prefixed(seed=2000)
    print("prefix_geglu_f32 under", PREFIX)
    total = sum(os.path.getsize(os.path.join(HERE, f)) for f in os.listdir(HERE))
    print("tests/data total", total, "bytes")


if __name__ == "__main__":
    main()
