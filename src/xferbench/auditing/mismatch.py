"""The note the audit adds to PyTorch's device-mismatch error: the op, the devices of its
tensors, and for each odd one the usual suspect, named: a ``.to()`` whose result was dropped,
a tensor created on the host (inside ``forward``, say) without ``device=``, or a module that
was never moved (a loss's ``weight``). The exception itself is PyTorch's, and propagates."""

from __future__ import annotations

import re
import sys
from collections import Counter
from types import FrameType
from typing import Any

from .frames import site_of, user_frame
from .sides import argument

# torch loads inside the functions that need it: the package imports without it.

#: The wordings of a device mismatch across PyTorch releases and kernels ("Expected all
#: tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
#: "... but got mat1 is on cpu, different from other tensors on cuda:0 ...", "Expected
#: object of device type cuda but got device type cpu ...", "Input type
#: (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same", ...).
#: A message must match one of them AND the op's tensors must sit on two devices.
MISMATCH = re.compile(r"same device|device type|to be on GPU|expected device|"
                      r"different from other tensors|should be the same", re.IGNORECASE)


def is_mismatch(exc: BaseException) -> bool:
    return bool(MISMATCH.search(str(exc))) and not getattr(exc, "_xferbench_noted", False)


def _described(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """(argument name, tensor) for every tensor the call got, lists flattened (``indices[1]``)."""
    import torch

    found = []
    for spec in func._schema.arguments:
        value = argument(func, args, kwargs, spec.name)
        if isinstance(value, torch.Tensor):
            found.append((spec.name, value))
        elif isinstance(value, (list, tuple)):
            found += [(f"{spec.name}[{j}]", v) for j, v in enumerate(value)
                      if isinstance(v, torch.Tensor)]
    return found


def _odd(tensors: list[tuple[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """The device most tensors are on (an accelerator before the CPU) and the others (a
    0-dim host tensor is a scalar to every kernel: never the odd one)."""
    counted = [(n, t) for n, t in tensors if not (t.device.type == "cpu" and t.dim() == 0)]
    devices = Counter(str(t.device) for _, t in counted)
    if len(devices) < 2:
        return "", []
    main = max(devices, key=lambda d: (d != "cpu", devices[d]))
    return main, [(n, t) for n, t in counted if str(t.device) != main]


def _shape(t: Any) -> str:
    return f"{str(t.dtype).removeprefix('torch.')} [{', '.join(map(str, t.shape))}]"


def _owner(tensor: Any, frame: FrameType | None) -> tuple[str, Any, Any] | None:
    """(attribute path, owning module, outermost module holding it) where ``tensor`` is a
    parameter or buffer of a module running on the stack, else None."""
    import torch

    found: tuple[str, Any, Any] | None = None
    while frame is not None:
        module = frame.f_locals.get("self")
        if isinstance(module, torch.nn.Module):
            named: dict[str, torch.Tensor] = dict(module.named_parameters(remove_duplicate=False))
            named.update(module.named_buffers(remove_duplicate=False))
            path = next((n for n, t in named.items() if t is tensor), None)
            if path is not None and (found is None or len(path) >= len(found[0])):
                found = (path, found[1] if found else module, module)
        frame = frame.f_back
    return found


def _suspect(recorder: Any, tensor: Any, main: str, frame: FrameType | None) -> str:
    """The usual suspect for the odd ``tensor``, in one sentence."""
    move = recorder.moves.get(tensor)
    if move is not None:
        if move.result() is None:
            return (f"`.to()` at {move.site.label} made a copy on {move.device} and dropped "
                    "it: a tensor is not moved in place, assign the result (`x = x.to(...)`) "
                    "[XB103]")
        return (f"a copy of it on {move.device} was made at {move.site.label}, but this op "
                "got the original")
    origin = recorder.origin_of(tensor)
    if origin is not None:
        where = f"created on the host at {origin.made_site.label}"
        if origin.made_site != origin.factory_site:
            where += f", from {origin.factory}(...) at {origin.factory_site.label}"
        elif not origin.from_data:
            where += f" by {origin.factory}(...)"
        how = ("pass `device=` to it" if not origin.from_data
               else f"make it with `device=` or move it to {main}")
        return f"{where} and never moved: {how} (e.g. `device=x.device` inside `forward`)"
    owner = _owner(tensor, frame)
    if owner is not None:
        path, module, root = owner
        what = "buffer" if path not in dict(root.named_parameters()) else "parameter"
        held = f"{type(root).__name__}.{path}"
        if module is not root:
            held += f" (in {type(module).__name__})"
        return (f"it is the {what} {held}: that module was never moved to {main} "
                f"(`module.to({main!r})` moves its parameters and buffers in place)")
    return (f"no host factory, copy or module under the audit made it: it came from outside "
            f"the audited code (a batch never moved to {main}?)")


def annotate(exc: BaseException, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             recorder: Any) -> str | None:
    """Add the audit's note to a device-mismatch ``exc`` raised by ``func`` (once), and
    return it; None where the op's tensors do not in fact sit on two devices."""
    import torch

    with torch._C.DisableTorchFunction():
        tensors = _described(func, args, kwargs)
        main, odd = _odd(tensors)
        if not odd:
            return None
        frame, _ = user_frame(sys._getframe(1))
        site = site_of(frame)
        listed = ", ".join(f"{n} on {t.device} ({_shape(t)})" for n, t in tensors)
        lines = [f"xferbench audit: {func._schema.name} at {site.label} (`{site.code}`) got "
                 f"{listed}."]
        for name, t in odd:
            lines.append(f"  {name} ({t.device}): "
                         f"{_suspect(recorder, t, main, sys._getframe(1))}")
    note = "\n".join(lines)
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python 3.10: no notes; the message carries it
        exc.args = (f"{exc.args[0] if exc.args else ''}\n{note}", *exc.args[1:])
    exc._xferbench_noted = True  # type: ignore[attr-defined]
    return note
