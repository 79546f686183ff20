"""Why: most users do not build modules one by one; they load a model and
want its MLP blocks to run on fmlp. patch() swaps every supported MLP
submodule (model.model.layers[i].mlp and the like) for an nn.Module that
calls fmlp, keeping the original's submodules registered under the same
names so state_dict() and parameters() read as before; unpatch() puts the
originals back.
"""
from . import _convert
from .errors import Error, InvalidArgument
from .modules import MLP


def _torch_module_class():
    import torch

    class PatchedMLP(torch.nn.Module):
        """An MLP block run by fmlp in place of `original` (kept, and put
        back by fmlp.unpatch). Its weights are a copy taken when patched:
        patch again after changing the original's parameters."""

        def __init__(self, original, fmlp_module):
            super().__init__()
            self.__dict__["_fmlp_original"] = original
            self.__dict__["fmlp"] = fmlp_module
            for name, child in original.named_children():
                self.add_module(name, child)

        def forward(self, x):
            return self.fmlp(x)

        def extra_repr(self):
            return "fmlp=%r, replaces %s" % (self.fmlp, type(self._fmlp_original).__name__)

    return PatchedMLP


_patched_class = None


def patched_class():
    """fmlp's replacement nn.Module class (torch is imported on first use)."""
    global _patched_class
    if _patched_class is None:
        _patched_class = _torch_module_class()
    return _patched_class


def _is_mlp(module):
    if _convert.is_gated(module):
        return True
    return _convert.is_stack(module) and sum(_convert._is_linear(c) for c in module.children()) >= 2


def patch(model, mode="auto", device=None):
    """Replaces every supported MLP submodule of `model` with one run by
    fmlp (on the module's own device, or `device`); returns
    {qualified name: original module}. A gated-looking module fmlp cannot run
    (an activation it lacks, say) raises fmlp.Unsupported, and nothing is
    replaced then."""
    cls = patched_class()
    if _is_mlp(model):
        raise InvalidArgument("patch() replaces MLP submodules inside a model, and %s is itself one; use "
                              "fmlp.MLP.from_torch(model) for it" % type(model).__name__)
    found = []

    def walk(parent, prefix):
        for name, child in parent.named_children():
            qual = prefix + name
            if isinstance(child, cls):
                continue
            if _is_mlp(child):
                found.append((parent, name, qual, child))
            else:
                walk(child, qual + ".")

    walk(model, "")
    built = []
    for parent, name, qual, child in found:
        try:
            built.append((parent, name, qual, child, MLP.from_torch(child, mode=mode, device=device)))
        except Error as e:
            raise type(e)("%s: %s" % (qual, e)) from None
    replaced = {}
    for parent, name, qual, child, fm in built:
        setattr(parent, name, cls(child, fm))
        replaced[qual] = child
    return replaced


def unpatch(model):
    """Puts back every module patch() replaced in `model`; returns the
    qualified names restored."""
    cls = patched_class()
    restored = []

    def walk(parent, prefix):
        for name, child in list(parent.named_children()):
            qual = prefix + name
            if isinstance(child, cls):
                setattr(parent, name, child._fmlp_original)
                child.fmlp.close()
                restored.append(qual)
            else:
                walk(child, qual + ".")

    walk(model, "")
    return restored
