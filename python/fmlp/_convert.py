"""Why: from_torch and patch must tell which PyTorch modules fmlp can run
and read their weights without importing transformers: gated MLPs are
recognised by Hugging Face's naming (gate_proj, up_proj, down_proj, act_fn),
activations by type and class name, stacks by their children. The result is
a plain description: the C desc fields and the weights by fmlp's tensor
names.
"""
import functools

from .errors import InvalidArgument, Unsupported

# Activation classes by name, so transformers need not be imported:
# transformers.activations' tanh-approximated GELUs all compute
# 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
_ACT_BY_CLASS = {
    "SiLU": "silu", "SiLUActivation": "silu", "Swish": "silu",
    "GELUTanh": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh", "GELUPytorchTanh": "gelu_tanh",
    "NewGELUActivation": "gelu_tanh", "FastGELUActivation": "gelu_tanh", "GELUActivation": "gelu",
    "ReLU": "relu",
}
SUPPORTED_ACTS = "SiLU, GELU (exact or approximate='tanh', and transformers' GELUTanh/PytorchGELUTanh/" \
                 "NewGELUActivation/FastGELUActivation/GELUActivation) and ReLU"
SUPPORTED_MODULES = ("nn.Linear, gated MLPs with gate_proj/up_proj/down_proj Linears and act_fn (LlamaMLP, "
                     "MistralMLP, Qwen2MLP, GemmaMLP), and nn.Sequential(Linear, act, Linear, ..., Linear)")


class Described:
    """What fmlp needs to build a module: desc fields, weights by name."""

    def __init__(self, block, dim, hidden, out_dim, layers, act, bias, weights, kind):
        self.block, self.dim, self.hidden, self.out_dim = block, dim, hidden, out_dim
        self.layers, self.act, self.bias = layers, act, bias
        self.weights = weights  # [(fmlp tensor name, torch tensor)]
        self.kind = kind        # "linear", "gated", "stack"

    @property
    def dtype(self):
        return self.weights[0][1].dtype

    @property
    def device(self):
        return self.weights[0][1].device


def activation_of(act):
    """fmlp's name for a PyTorch activation module or function, else None."""
    torch = _torch()
    if isinstance(act, torch.nn.GELU):
        return "gelu_tanh" if getattr(act, "approximate", "none") == "tanh" else "gelu"
    if isinstance(act, functools.partial):
        if act.func is torch.nn.functional.gelu and not act.args:
            return "gelu_tanh" if act.keywords.get("approximate", "none") == "tanh" else "gelu"
        return None
    F = torch.nn.functional
    functions = {F.silu: "silu", F.gelu: "gelu", F.relu: "relu", torch.relu: "relu"}
    try:
        if act in functions:
            return functions[act]
    except TypeError:
        pass
    for cls in type(act).__mro__:
        name = _ACT_BY_CLASS.get(cls.__name__)
        if name:
            return name
    return None


def _torch():
    import torch
    return torch


def _is_linear(m):
    return isinstance(m, _torch().nn.Linear)


def is_gated(module):
    return all(_is_linear(getattr(module, n, None)) for n in ("gate_proj", "up_proj", "down_proj"))


def _skippable(m):
    nn = _torch().nn
    return isinstance(m, nn.Identity) or (isinstance(m, nn.Dropout) and not m.training)


def is_stack(module):
    return isinstance(module, _torch().nn.Sequential) and any(_is_linear(c) for c in module.children())


def _bias_of(linears, what):
    have = [lin.bias is not None for lin in linears]
    if any(have) and not all(have):
        raise Unsupported("%s: some Linears have a bias and some do not; fmlp needs all or none" % what)
    return have[0]


def _weights(named_linears, bias):
    out = []
    for name, lin in named_linears:
        out.append((name + ".weight", lin.weight))
        if bias:
            out.append((name + ".bias", lin.bias))
    return out


def describe(module, what="module"):
    """A Described for `module`, or Unsupported saying why not."""
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise InvalidArgument("%s is a %s, not a torch.nn.Module; fmlp converts %s"
                              % (what, type(module).__name__, SUPPORTED_MODULES))
    if _is_linear(module):
        bias = module.bias is not None
        return Described(1, module.in_features, 0, module.out_features, 1, "none", bias,
                         _weights([("0", module)], bias), "linear")
    if is_gated(module):
        return _describe_gated(module, what)
    if is_stack(module):
        return _describe_stack(module, what)
    raise Unsupported("%s (%s) is not a module fmlp runs; it takes %s" % (what, type(module).__name__,
                                                                          SUPPORTED_MODULES))


def _describe_gated(module, what):
    g, u, d = module.gate_proj, module.up_proj, module.down_proj
    act_fn = None
    for attr in ("act_fn", "act", "activation_fn", "activation"):
        if hasattr(module, attr):
            act_fn = getattr(module, attr)
            break
    if act_fn is None:
        raise Unsupported("%s (%s) has gate_proj/up_proj/down_proj but no act_fn; fmlp cannot tell its activation"
                          % (what, type(module).__name__))
    act = activation_of(act_fn)
    if act is None:
        raise Unsupported("%s: activation %s is not one fmlp runs; it runs %s"
                          % (what, type(act_fn).__name__, SUPPORTED_ACTS))
    dim, hidden = g.in_features, g.out_features
    if (u.in_features, u.out_features) != (dim, hidden) or d.in_features != hidden:
        raise Unsupported("%s: gate_proj %s, up_proj %s and down_proj %s do not chain as "
                          "down(act(gate(x)) * up(x))" % (what, tuple(g.weight.shape), tuple(u.weight.shape),
                                                          tuple(d.weight.shape)))
    bias = _bias_of([g, u, d], what)
    return Described(0, dim, hidden, d.out_features, 0, act, bias,
                     _weights([("gate_proj", g), ("up_proj", u), ("down_proj", d)], bias), "gated")


def _describe_stack(module, what):
    items = [c for c in module.children() if not _skippable(c)]
    linears = items[0::2]
    acts = items[1::2]
    shape_ok = len(items) % 2 == 1 and all(_is_linear(m) for m in linears)
    names = [activation_of(a) for a in acts] if shape_ok else []
    if not shape_ok or any(_is_linear(a) for a in acts):
        raise Unsupported("%s: nn.Sequential of %s; fmlp runs Linear, act, Linear, ..., Linear (one activation "
                          "between each pair of Linears)" % (what, ", ".join(type(c).__name__ for c in items)))
    if any(n is None for n in names):
        bad = [type(a).__name__ for a, n in zip(acts, names) if n is None]
        raise Unsupported("%s: activation %s is not one fmlp runs; it runs %s" % (what, bad[0], SUPPORTED_ACTS))
    if len(set(names)) > 1:
        raise Unsupported("%s: the stack mixes activations (%s); fmlp needs one" % (what, ", ".join(names)))
    if len(linears) > 32:
        raise Unsupported("%s: %d Linears; fmlp stacks hold 1..32" % (what, len(linears)))
    dim, out_dim = linears[0].in_features, linears[-1].out_features
    hidden = linears[0].out_features if len(linears) > 1 else 0
    for i, lin in enumerate(linears):
        want_in = dim if i == 0 else hidden
        want_out = out_dim if i == len(linears) - 1 else hidden
        if (lin.in_features, lin.out_features) != (want_in, want_out):
            raise Unsupported("%s: Linear %d is %d -> %d but fmlp stacks keep one hidden width (%d -> %d here)"
                              % (what, i, lin.in_features, lin.out_features, want_in, want_out))
    bias = _bias_of(linears, what)
    # fmlp names the layers as nn.Sequential(Linear, act, Linear, ...) numbers them.
    named = [(str(2 * i), lin) for i, lin in enumerate(linears)]
    return Described(1, dim, hidden, out_dim, len(linears), names[0] if names else "none", bias,
                     _weights(named, bias), "stack")
