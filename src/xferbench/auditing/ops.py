"""Which aten call is what, for the audit: a copy, an op that makes the host wait, an advanced
index (a wait when its mask is boolean), a host factory, a tensor made from host data, or
pinning; and what the user's code called, named for the report.

Names are matched on the aten op (``aten::_to_copy``), never on the Python API, so a copy is
recognised whichever way a torch release decomposes ``.to()``. The classification of an
``OpOverload`` is cached: the dispatch handler asks once per op, not once per call.
"""

from __future__ import annotations

from typing import Any

COPY, SYNC, INDEX, FACTORY, FROM_DATA, PIN = "copy", "sync", "index", "factory", "data", "pin"

#: Copies (and their decompositions across releases): ``.to()``, ``.cpu()``, ``.cuda()``,
#: ``copy_``. Only those whose two sides sit on different devices are recorded.
COPY_OPS = frozenset({"_to_copy", "to", "copy_", "copy", "_copy_from", "_copy_from_and_resize"})

#: Ops that make the host wait for the device when their input is on it, by sync kind: a
#: value read back (``item``: ``.item()``, ``bool()``, ``float()``, ``if t:``), and ops
#: whose output size depends on device data (the host must learn it to allocate).
SYNC_OPS = {
    "_local_scalar_dense": "item", "item": "item", "is_nonzero": "bool",
    "nonzero": "nonzero", "argwhere": "nonzero", "masked_select": "masked_select",
    "unique": "unique", "_unique": "unique", "_unique2": "unique", "unique_dim": "unique",
    "unique_consecutive": "unique", "unique_dim_consecutive": "unique",
    "repeat_interleave": "repeat_interleave", "bincount": "bincount", "equal": "equal",
}

#: Advanced indexing: a boolean (or uint8) mask turns into indices with a nonzero inside.
INDEX_OPS = frozenset({"index", "index_put_", "index_put", "_index_put_impl_"})

#: Factories that generate their data (constants, ranges, random numbers): made on the
#: host and then moved, they could have been made on the device with ``device=``.
FACTORY_OPS = frozenset({
    "zeros", "ones", "empty", "empty_strided", "full", "arange", "linspace", "logspace",
    "eye", "rand", "randn", "randint", "randperm", "normal", "scalar_tensor", "zeros_like",
    "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
    "new_zeros", "new_ones", "new_full", "new_empty", "new_empty_strided", "tril_indices",
    "triu_indices", "bartlett_window", "blackman_window", "hamming_window", "hann_window",
    "kaiser_window",
})
#: Tensors made from Python or NumPy data (``torch.tensor``): their bytes must cross to the
#: device whatever the code does; tracked only to say where a tensor came from.
FROM_DATA_OPS = frozenset({"lift_fresh", "lift_fresh_copy", "lift"})
PIN_OPS = frozenset({"_pin_memory", "pin_memory"})

#: The kinds of wait, as the report names them.
SYNC_KINDS = {
    "item": ".item()", "bool": "bool() / if tensor", "float": "float()", "int": "int()",
    "tolist": ".tolist()", "numpy": ".numpy()", "cpu": ".cpu()", "print": "print()",
    "to_host": "a copy to the host", "nonzero": "nonzero", "boolean_mask": "boolean mask",
    "masked_select": "masked_select", "unique": "unique",
    "repeat_interleave": "repeat_interleave", "bincount": "bincount",
    "equal": "torch.equal", "synchronize": "explicit synchronize",
}

#: What the user called (a Tensor method or torch function), by its name, as a sync kind:
#: it names the wait the dispatcher sees inside it.
CALL_KINDS = {
    "item": "item", "__bool__": "bool", "__float__": "float", "__int__": "int",
    "__index__": "int", "__complex__": "float", "tolist": "tolist", "numpy": "numpy",
    "cpu": "cpu", "__repr__": "print", "__str__": "print", "__format__": "print",
    "nonzero": "nonzero", "argwhere": "nonzero", "where": "nonzero",
    "__getitem__": "boolean_mask", "__setitem__": "boolean_mask",
    "masked_select": "masked_select", "equal": "equal",
}
#: Calls that read a tensor's values on the host. On a CPU-only run the dispatcher sees no
#: copy inside ``.cpu()``/``.tolist()``/``.numpy()`` (the tensor is on the host already),
#: so these count from the call itself there.
HOST_READ_CALLS = frozenset({"tolist", "numpy", "cpu", "__repr__", "__str__", "__format__"})
#: Calls that format a tensor: torch's formatter turns every mode off, so the copy of a
#: device tensor to the host inside them is recorded from the call itself.
PRINT_CALLS = frozenset({"__repr__", "__str__", "__format__"})
#: Calls that make a tensor from data and can place it on a device in one step: the copy
#: inside them happens below the dispatcher (``torch.tensor(data, device=dev)``).
DATA_CALLS = frozenset({"tensor", "as_tensor", "asarray", "new_tensor"})

#: The classification of each OpOverload seen, by the op (filled by ``classify``).
CATEGORIES: dict[Any, tuple[str | None, str]] = {}


def classify(func: Any) -> tuple[str | None, str]:
    """(category or None, op name without overload) of an ``OpOverload``."""
    found = CATEGORIES.get(func)
    if found is None:
        name = func.__name__.split(".")[0]
        category: str | None = None
        if getattr(func, "namespace", "aten") == "aten":
            if name in COPY_OPS:
                category = COPY
            elif name in SYNC_OPS:
                category = SYNC
            elif name in INDEX_OPS:
                category = INDEX
            elif name in FACTORY_OPS:
                category = FACTORY
            elif name in FROM_DATA_OPS:
                category = FROM_DATA
            elif name in PIN_OPS:
                category = PIN
        found = (category, name)
        CATEGORIES[func] = found
    return found


_labels: dict[Any, tuple[str, str]] = {}

#: How a dunder method is shown in the report.
_DUNDERS = {"__bool__": "bool()", "__float__": "float()", "__int__": "int()",
            "__index__": "int()", "__complex__": "complex()", "__repr__": "print()",
            "__str__": "str()", "__format__": "format()", "__getitem__": "[] (indexing)",
            "__setitem__": "[]= (index assignment)"}


def call_label(func: Any) -> tuple[str, str]:
    """(short name, label) of a function the user's code called: ("item", ".item()"),
    ("where", "torch.where()"), ("linear", "torch.nn.functional.linear()")."""
    found = _labels.get(func)
    if found is None:
        name = getattr(func, "__name__", "") or type(func).__name__
        qual = getattr(func, "__qualname__", name) or name
        if name in _DUNDERS:
            label = _DUNDERS[name]
        elif qual.startswith(("TensorBase.", "Tensor.")) or getattr(
                func, "__module__", "") == "torch.utils.backend_registration":
            label = f".{name}()"  # (the second: a PrivateUse1 backend's t.emu(), t.npu())
        elif qual.startswith("_VariableFunctionsClass."):
            label = f"torch.{name}()"
        else:
            module = getattr(func, "__module__", None) or "torch"
            label = f"{module}.{name}()"
        found = (name, label)
        _labels[func] = found
    return found


def sync_kind(op_kind: str, call: str | None) -> str:
    """The kind a wait is reported as: what the user called where it names a read
    (``float(t)`` rather than the ``_local_scalar_dense`` inside), else the op's kind."""
    called = CALL_KINDS.get(call or "")
    if op_kind == "item":
        return called if called in ("item", "bool", "float", "int", "print", "tolist") else "item"
    if op_kind == "to_host":
        return called if called in ("cpu", "tolist", "numpy", "print", "item") else "to_host"
    return op_kind


def repeat_interleave_waits(func: Any, kwargs: dict[str, Any]) -> bool:
    """``repeat_interleave`` with a tensor of repeats waits (the host must sum them to size
    the output) unless ``output_size`` is given; with an int of repeats it never waits."""
    overload = func.__name__.partition(".")[2]
    return overload in ("Tensor", "self_Tensor") and kwargs.get("output_size") is None


def nbytes(tensor: Any) -> int:
    return int(tensor.numel()) * int(tensor.element_size())
