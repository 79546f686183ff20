"""fmlp for PyTorch users: run nn.Linear and MLP blocks (GeGLU, SwiGLU,
Linear-act stacks) through fmlp's C library, zero-copy on torch tensors, and
profile them with an API that mirrors torch.profiler.

    import fmlp
    mlp = fmlp.MLP.from_torch(model.model.layers[0].mlp)   # or fmlp.patch(model)
    with torch.inference_mode():
        y = mlp(x)

`import fmlp` needs neither torch nor numpy; they are used when given.
"""
from ._context import Context, context, cuda_device_count
from .errors import (DeviceError, Error, FileError, FormatError, InternalError, InvalidArgument, NoDevice,
                     OutOfMemory, ShapeError, Unsupported)
from .modules import MLP, Linear, Plan
from .patch import patch, unpatch
from .profiler import (KeyAverages, ProfilerActivity, Schedule, Summary, profile, record_function, schedule,
                       tensorboard_trace_handler)
from . import trace

__version__ = "0.1.0"

__all__ = ["Context", "context", "cuda_device_count", "MLP", "Linear", "Plan", "patch", "unpatch", "profile",
           "ProfilerActivity", "Schedule", "schedule", "record_function", "tensorboard_trace_handler",
           "KeyAverages", "Summary", "trace", "Error", "InvalidArgument", "ShapeError", "OutOfMemory",
           "FileError", "FormatError", "Unsupported", "NoDevice", "DeviceError", "InternalError"]
