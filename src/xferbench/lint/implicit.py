"""Reads and copies a line does not spell out: boolean-mask indexing (``x[mask]`` of a mask
computed on the device: its size is read on the host), ``nonzero``, the legacy ``.data[0]``
of a loss (a Python number before PyTorch 0.4), and host noise made into a CUDA tensor every
step (``Tensor(np.random.normal(...))`` with ``Tensor = torch.cuda.FloatTensor``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from .facts import BOOL_TAG, HOST_OTHER, ON_DEVICE, TENSOR, Val, terminal
from .part import Part
from .records import Fac

#: Methods and torch functions whose result is a boolean tensor (a mask).
BOOLEAN = frozenset({"bool", "eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite",
                     "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
                     "logical_xor", "greater", "less", "greater_equal", "less_equal",
                     "not_equal", "isin", "isclose"})
#: ... and those whose output's size depends on the data: the host waits to learn it.
SIZED = frozenset({"nonzero", "masked_select", "argwhere", "nonzero_static"})
#: A name for a scalar the legacy ``.data[0]`` read as a number: a loss, a count.
_SCALAR = re.compile(r"loss|acc|correct|err|nll|kl|norm|total|score|reward")


def numpy_random(node: ast.expr, qualname: Callable[[ast.expr], str | None]) -> str | None:
    """``np.random.normal`` where ``node`` calls numpy's random module, else None."""
    if isinstance(node, ast.Call):
        qual = qualname(node.func) or ""
        if qual.startswith("numpy.random."):
            return qual
    return None


class Implicit(Part):
    """Implicit reads and host noise."""

    def mask_index(self, node: ast.Subscript, index: Val) -> None:
        """``x[mask]`` with a boolean mask on the device: a nonzero runs inside."""
        if index.tag is BOOL_TAG and index.tensorish:
            self.an.exprs.host_read(node, index,
                                    "boolean-mask indexing `x[mask]` (a nonzero inside)")

    def sized(self, node: ast.Call, name: str, v: Val) -> None:
        """``torch.nonzero(t)``, ``t.nonzero()``: the host reads how many there are."""
        if name in SIZED and v.tensorish:
            self.an.exprs.host_read(node, v, f"`{name}()` (its output's size is read on the host)")

    def legacy_read(self, node: ast.Subscript, base: Val) -> Val | None:
        """``loss.data[0]``: before PyTorch 0.4 a Python number, read on the host."""
        value = node.value
        if not (isinstance(value, ast.Attribute) and value.attr == "data" and isinstance(
                node.slice, ast.Constant) and node.slice.value == 0 and base.tensorish):
            return None
        name = terminal(value.value) or (
            terminal(value.value.func) if isinstance(value.value, ast.Call) else "") or ""
        if not _SCALAR.search(name.lower()) and name not in ("sum", "mean", "item"):
            return None
        self.an.exprs.host_read(node, base, "`.data[0]` (the legacy `.item()`)", strong=True)
        return HOST_OTHER

    def host_noise(self, node: ast.Call) -> Val:
        """``Tensor(np.random.normal(...))`` with a CUDA legacy constructor: host noise
        copied to the device (XB102)."""
        first = node.args[0] if node.args else None
        qual = numpy_random(first, self.an.names.qualname) if first is not None else None
        if first is not None and qual is not None:
            self.an.report(first, "XB102", self.noise_message(qual, ast.unparse(node.func)))
        return Val(TENSOR, ON_DEVICE)

    @staticmethod
    def noise_message(qual: str, copier: str) -> str:
        draw = qual.replace("numpy.random.", "np.random.")
        return (f"`{draw}(...)` draws on the host and `{copier}(...)` then copies it to the "
                "device: draw it there (`torch.randn(..., device=...)`, `torch.rand`, "
                "`torch.randint`; the numbers change, so --fix leaves it)")

    def noise_source(self, node: ast.Call) -> Fac | None:
        """``torch.from_numpy(np.random.randn(...))``: a host factory for XB102's move."""
        first = node.args[0] if node.args else None
        qual = numpy_random(first, self.an.names.qualname) if first is not None else None
        return Fac(node, qual, self.an.walker.current_loop()) if qual else None
