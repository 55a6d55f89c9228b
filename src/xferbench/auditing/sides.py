"""An aten call's tensors, read by role from its schema: the two sides of a copy, whether a
wait-prone op really waits, the tensors it takes and returns."""

from __future__ import annotations

from typing import Any

from .ops import repeat_interleave_waits

# torch loads inside the functions that need it: the package imports without it.

_positions: dict[Any, dict[str, int]] = {}


def argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
             default: Any = None) -> Any:
    """The argument ``name`` of a call of ``func`` (an OpOverload), given by position or
    keyword; ``default`` where it was left out."""
    if name in kwargs:
        return kwargs[name]
    positions = _positions.get(func)
    if positions is None:
        positions = {a.name: i for i, a in enumerate(func._schema.arguments)
                     if not a.kwarg_only}
        _positions[func] = positions
    i = positions.get(name)
    return args[i] if i is not None and i < len(args) else default


def copy_sides(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
               out: Any) -> tuple[Any, Any, bool] | None:
    """(source, destination, non_blocking) of a copy op's call, or None where it moved
    nothing (``to`` that returned its input)."""
    import torch

    if name in ("copy_",):
        src, dst = args[1], args[0]
    elif name == "copy":
        src, dst = args[1], out
    elif name in ("_copy_from", "_copy_from_and_resize"):
        src, dst = args[0], args[1]
    else:  # _to_copy, to.*
        src, dst = args[0], out
    if not isinstance(src, torch.Tensor) or not isinstance(dst, torch.Tensor) or src is dst:
        return None
    return src, dst, bool(argument(func, args, kwargs, "non_blocking", False))


def same_layout(src: Any, dst: Any) -> bool:
    """Whether a copy needs no host-side staging: as CUDA's copy kernel, the two sides have
    as many elements (no broadcast) and both are contiguous or share their strides. Else
    torch makes a contiguous temporary in pageable host memory, and the copy through it
    cannot be asynchronous (a dtype change alone is made on the device: no staging)."""
    if src.numel() != dst.numel():
        return False
    return (src.is_contiguous() and dst.is_contiguous()) or src.stride() == dst.stride()


def tensors_in(values: Any) -> list[Any]:
    """The tensors among a call's arguments or results (one level into lists and tuples)."""
    import torch

    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def outputs(out: Any) -> list[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [v for v in out if isinstance(v, torch.Tensor)]
    return []


def boolean_mask(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The boolean (or uint8) mask among an advanced index's indices, or None; None too for
    an index assignment torch turns into ``masked_fill_`` (one mask, a one-element value on
    the host, no accumulate: aten's canDispatchToMaskedFill), which does not wait."""
    import torch

    indices = argument(func, args, kwargs, "indices", ()) or ()
    masks = [i for i in indices if isinstance(i, torch.Tensor)
             and i.dtype in (torch.bool, torch.uint8)]
    if not masks:
        return None
    if func.__name__.startswith(("index_put", "_index_put_impl_")):
        value = argument(func, args, kwargs, "values")
        defined = [i for i in indices if i is not None]
        if (len(defined) == 1 and isinstance(value, torch.Tensor) and value.numel() == 1
                and value.device.type == "cpu" and masks[0].device == args[0].device
                and not argument(func, args, kwargs, "accumulate", False)):
            return None
    return masks[0]


def wait_input(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The tensor whose device decides whether a wait-prone op waits (its data must come
    back to the host), or None where this call does not wait at all."""
    import torch

    if name == "repeat_interleave" and not repeat_interleave_waits(func, kwargs):
        return None
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return first
