"""What PyTorch does, checked per release: the behaviours the devices guide states, each a
check that holds or not, with what this release did (its words, where it raised).

``tensor_to_new``
    ``tensor.to(device)`` returns a new tensor on ``device`` and leaves the original where it
    was, its values unchanged (so ``x = x.to(device)`` must reassign).
``module_to_in_place``
    ``module.to(device)`` moves the module's parameters and returns the module itself (so
    ``model.to(device)`` alone works). Whether the parameter objects are kept (CUDA) or
    replaced (a backend without a compatible shallow copy) is said in the observation: an
    optimizer made before the move holds the parameters it was given.
``mismatch_batch_not_moved``, ``mismatch_created_in_forward``, ``mismatch_loss_weight``
    The three usual causes of "Expected all tensors to be on the same device" raise it: a
    batch left on the host, a tensor created in ``forward`` without ``device=x.device``, and
    a loss weight (``CrossEntropyLoss(weight=...)``) left on the host. The observation is the
    error's first line as this release words it.

The other device is the device under test; on a CPU-only machine the two ``.to()`` checks
use PyTorch's ``meta`` device (a device without storage: ``.to()`` and ``module.to()`` treat
it as any other), and the mismatch checks are skipped at discovery: every tensor is on the
CPU there, and the meta device's own device check raises another error. Nothing is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: The checks, in the guide's order.
CHECKS = ("tensor_to_new", "module_to_in_place", "mismatch_batch_not_moved",
          "mismatch_created_in_forward", "mismatch_loss_weight")
#: The checks that need an operation mixing two devices.
MISMATCH = tuple(c for c in CHECKS if c.startswith("mismatch_"))
#: The words the devices guide quotes; a mismatch check holds when the error says them.
EXPECTED_ERROR = "Expected all tensors to be on the same device"
#: The other device of the two .to() checks on a CPU-only machine.
CPU_STAND_IN = "meta"


def behaviour_skip_reason(check: str, caps: Capabilities) -> str | None:
    """Why ``check`` cannot be made on a device with ``caps``; the capability probe only."""
    if check not in CHECKS:
        return f"check {check!r} is not one of {', '.join(CHECKS)}"
    if caps.device == "cpu" and check in MISMATCH:
        return ("a device mismatch needs an accelerator: on a CPU-only machine every tensor "
                "is on the CPU, so no operation mixes two devices")
    return None


@dataclass(frozen=True)
class BehaviourResult:
    """One check on one device: whether the behaviour held, and what was seen."""

    check: str
    holds: bool
    observed: str  # what this release did, in one line (an error's first line, its words)
    device: str  # the other device: the device under test, or "meta" on a CPU-only machine

    @property
    def value(self) -> float:
        """1.0 where the behaviour held, 0.0 where it did not: what asv stores."""
        return 1.0 if self.holds else 0.0


def target_device(dev: Device) -> str:
    """The device a check moves to: the device under test, or the meta device on a CPU."""
    return dev.name if dev.is_accelerator else CPU_STAND_IN


def run_behaviour(check: str, device: str | Device = "auto") -> BehaviourResult:
    """Make the check ``check`` against ``device`` (the host is the other side)."""
    dev = resolve_device(device)
    reason = behaviour_skip_reason(check, capabilities(dev))
    if reason:
        raise XferbenchError(f"{check} on {dev}: {reason}")
    target = target_device(dev)
    holds, observed = _CHECKS[check](target)
    if dev.is_accelerator:
        synchronize(dev)
    return BehaviourResult(check, holds, observed, target)


def _tensor_to_new(target: str) -> tuple[bool, str]:
    import torch

    x = torch.arange(16, dtype=torch.float32)
    before = x.clone()
    y = x.to(target)
    new = y is not x
    left = x.device.type == "cpu" and torch.equal(x, before)
    arrived = y.device.type == torch.device(target).type
    if arrived and target != CPU_STAND_IN:  # a meta tensor holds no values to compare
        arrived = torch.equal(y.to("cpu"), before)
    returned = "a new tensor" if new else "x itself"
    values = "its values unchanged" if left else "its values changed"
    return (new and left and arrived,
            f"x.to({target!r}) returned {returned} on {y.device}; x stayed on {x.device}, "
            f"{values}")


def _module_to_in_place(target: str) -> tuple[bool, str]:
    import torch
    from torch import nn

    model = nn.Linear(8, 4)
    before = list(model.parameters())
    returned = model.to(target)
    after = list(model.parameters())
    moved = all(p.device.type == torch.device(target).type for p in after)
    kept = all(a is b for a, b in zip(after, before))
    words = [f"model.to({target!r}) returned " + ("the module itself" if returned is model
                                                  else "another object"),
             f"its {len(after)} parameters are " + (f"on {after[0].device}" if moved
                                                     else "not all moved"),
             "the parameter objects are the same ones" if kept else
             "the parameter objects were replaced: an optimizer made before the move holds "
             "the old ones"]
    return returned is model and moved, "; ".join(words)


def _raises(target: str, call: Callable[[Any, Any], Any]) -> tuple[bool, str]:
    """Whether ``call(model, device)`` raises the device-mismatch error, and what it said."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 4).to(target)
    try:
        out = call(model, torch.device(target))
    except RuntimeError as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        return EXPECTED_ERROR in first, f"RuntimeError: {first}"
    except Exception as exc:  # another error is an observation too, never a pass
        first = (str(exc).strip().splitlines() or [""])[0]
        return False, f"{type(exc).__name__}: {first}"
    where = getattr(out, "device", None)
    return False, f"no error: the call returned a tensor on {where}"


def _batch_not_moved(model: Any, device: Any) -> Any:
    import torch

    batch = torch.randn(2, 8)  # left on the host: the first suspect
    return model(batch)


def _created_in_forward(model: Any, device: Any) -> Any:
    import torch
    from torch import nn

    class Shifted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x: Any) -> Any:
            # created without device=x.device: the second suspect
            return self.inner(x) + torch.ones(x.shape[0], 4)

    return Shifted()(torch.randn(2, 8, device=device))


def _loss_weight(model: Any, device: Any) -> Any:
    import torch
    from torch import nn

    loss = nn.CrossEntropyLoss(weight=torch.ones(4))  # the weight stayed on the host
    logits = model(torch.randn(2, 8, device=device))
    return loss(logits, torch.zeros(2, dtype=torch.long, device=device))


_CHECKS: dict[str, Callable[[str], tuple[bool, str]]] = {
    "tensor_to_new": _tensor_to_new,
    "module_to_in_place": _module_to_in_place,
    "mismatch_batch_not_moved": lambda target: _raises(target, _batch_not_moved),
    "mismatch_created_in_forward": lambda target: _raises(target, _created_in_forward),
    "mismatch_loss_weight": lambda target: _raises(target, _loss_weight),
}
