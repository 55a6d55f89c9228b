"""Tensor creation on the device vs on the host then copied, and masks made inside forward.

Compared: ``torch.f(..., device=dev)`` vs ``torch.f(...).to(dev)`` vs
``torch.f(...).to(dev, non_blocking=True)`` for nine factory calls, and a module whose
``forward`` builds its mask and positions on the host and moves them, vs ``device=x.device``,
vs registered buffers (the last in ``practices.forward``).

Each case is a frozen ``CreationCase`` or ``ForwardCase`` (the identity of the measurement);
``build_*`` allocates inputs outside any timed region and returns a callable that creates
the tensor; ``run_*`` measures it and verifies the result, raising ``VerificationError`` so
that no number is recorded for a wrong tensor.

What is verified:
  * deterministic factories (zeros, ones, full, empty+fill_, arange, tensor(list),
    as_tensor(ndarray)) must equal the CPU reference bit for bit, in every variant;
  * rand/randn drawn on the host (every variant on the CPU; ``to`` and ``to_non_blocking``
    on an accelerator) come from a CPU generator reseeded with ``SEED`` before each call,
    so they too must equal the CPU reference bit for bit;
  * rand/randn drawn on an accelerator come from that device's generator, whose stream of
    numbers differs from the CPU's: those are checked for shape, dtype and device only
    (plus that the values lie in the distribution's support, which costs nothing to ask).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from ..units import KiB, MiB, size_label
from . import FULL_SIZES, HEADLINE_NBYTES, SMOKE_NBYTES, VerificationError, sweep

# torch and numpy load inside the functions that need them: `import xferbench` stays free
# of them.

FACTORIES = (
    "zeros", "ones", "full", "empty_fill", "rand", "randn", "arange", "tensor_list",
    "as_tensor",
)
#: Factories whose values do not depend on a random generator.
DETERMINISTIC = ("zeros", "ones", "full", "empty_fill", "arange", "tensor_list", "as_tensor")
RANDOM = ("rand", "randn")
#: on_device: torch.f(..., device=dev); to: torch.f(...).to(dev); to_non_blocking: the same
#: with non_blocking=True.
VARIANTS = ("on_device", "to", "to_non_blocking")

#: The clock every creation number is read on: host time until the tensor is ready on the
#: device, synchronised (device events would miss the host-side half of ``.to(dev)``).
READY_CLOCK = "completion_s"

#: Seed of every generator used here (CPU generator, device generator, numpy input data).
SEED = 1234
#: The value torch.full / fill_ write: neither 0 nor 1 and not exact in binary, so a wrong
#: fill or a float64 round trip cannot pass by accident.
FILL_VALUE = 3.14159
#: Python lists cost about 32 bytes per float (8 for the pointer, 24 for the float object)
#: and torch.tensor(list) converts them one by one: above this many tensor bytes the list
#: alone would take hundreds of MB and seconds to build, which no one does to move data.
TENSOR_LIST_MAX_NBYTES = 4 * MiB

#: The short default grid: a latency-bound size and the headline size.
DEFAULT_CREATION_SIZES = (4 * KiB, HEADLINE_NBYTES)

#: Factories and variants of the memory grid: the host peak is nbytes whenever the tensor is
#: made on the host, so three factories cover it: a memset (zeros), a generator (randn) and
#: an existing numpy array that as_tensor wraps without a host copy.
MEMORY_FACTORIES = ("zeros", "randn", "as_tensor")
MEMORY_VARIANTS = ("on_device", "to")


def creation_sizes() -> tuple[int, ...]:
    """4 KiB and 64 MiB by default; every power of two 1 KiB..1 GiB under XFERBENCH_SWEEP=full;
    the smoke sweep's one size under XFERBENCH_SWEEP=smoke."""
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_CREATION_SIZES)


@dataclass(frozen=True)
class CreationCase:
    factory: str  # one of FACTORIES
    variant: str  # on_device | to | to_non_blocking
    nbytes: int

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("factory", self.factory, FACTORIES),
            ("variant", self.variant, VARIANTS),
        ):
            if value not in allowed:
                raise XferbenchError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if self.nbytes <= 0 or self.nbytes % self.itemsize:
            raise XferbenchError(
                f"size {self.nbytes} is not a size for {self.factory}: give a positive "
                f"multiple of {self.itemsize} bytes"
            )

    @property
    def itemsize(self) -> int:
        # arange makes positions/indices, which are int64 in real code (and exact at any size,
        # where float32 stops counting exactly at 2**24).
        return 8 if self.factory == "arange" else 4

    @property
    def numel(self) -> int:
        return self.nbytes // self.itemsize

    @property
    def label(self) -> str:
        return f"{self.factory} {self.variant} {size_label(self.nbytes)}"


def creation_skip_reason(case: CreationCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``, or None when it runs.

    Depends only on the case and the capability probe, so asv can skip at discovery.
    """
    if case.factory == "tensor_list" and case.nbytes > TENSOR_LIST_MAX_NBYTES:
        return (
            f"torch.tensor(list) is capped at {size_label(TENSOR_LIST_MAX_NBYTES)}: a Python "
            "list that size costs 8x its bytes and seconds to build; no one moves data so"
        )
    if caps.device == "cpu" and case.variant == "to_non_blocking":
        return "non_blocking needs an accelerator: on the CPU .to('cpu') returns the same tensor"
    return None


def draws_on_host(case: CreationCase, device: Device) -> bool:
    """Whether a random factory draws from the CPU generator (so it is checkable bit for bit)."""
    return case.variant != "on_device" or not device.is_accelerator


def host_input(case: CreationCase) -> Any:
    """The user's data for tensor_list / as_tensor (a list, an ndarray), or None.

    float32 values, so that the list's Python floats convert back without rounding.
    """
    if case.factory not in ("tensor_list", "as_tensor"):
        return None
    import numpy as np

    arr = np.random.default_rng(SEED).standard_normal(case.numel, dtype=np.float32)
    return arr.tolist() if case.factory == "tensor_list" else arr


def reference(case: CreationCase, data: Any = None) -> Any:
    """The tensor every variant must produce, made on the CPU (for random factories: the
    host draw from a CPU generator seeded with SEED)."""
    import torch

    n, f = case.numel, case.factory
    if f == "zeros":
        return torch.zeros(n)
    if f == "ones":
        return torch.ones(n)
    if f in ("full", "empty_fill"):
        return torch.full((n,), FILL_VALUE)
    if f == "arange":
        return torch.arange(n, dtype=torch.int64)
    if f in RANDOM:
        gen = torch.Generator().manual_seed(SEED)
        return getattr(torch, f)(n, generator=gen)
    if data is None:
        data = host_input(case)
    if f == "tensor_list":
        return torch.tensor(data, dtype=torch.float32)
    return torch.from_numpy(data)


def _maker(case: CreationCase, device: Device, data: Any) -> Callable[[Any], Any]:
    """``make(dev)``: the factory call with ``device=dev`` (None means the default, the CPU)."""
    import torch

    n, f = case.numel, case.factory
    if f == "zeros":
        return lambda d: torch.zeros(n, device=d)
    if f == "ones":
        return lambda d: torch.ones(n, device=d)
    if f == "full":
        return lambda d: torch.full((n,), FILL_VALUE, device=d)
    if f == "empty_fill":
        return lambda d: torch.empty(n, device=d).fill_(FILL_VALUE)
    if f == "arange":
        return lambda d: torch.arange(n, dtype=torch.int64, device=d)
    if f == "tensor_list":
        return lambda d: torch.tensor(data, dtype=torch.float32, device=d)
    if f == "as_tensor":
        return lambda d: torch.as_tensor(data, device=d)
    draw = getattr(torch, f)
    # One generator per variant, reseeded before every call: each call draws the same
    # numbers, so the last result can be checked whenever the draw is on the host.
    gen = torch.Generator(device=device.torch() if not draws_on_host(case, device) else "cpu")

    def make(d: Any) -> Any:
        gen.manual_seed(SEED)
        return draw(n, device=d, generator=gen)

    return make


@dataclass
class CreationWorkload:
    """A built case: ``run()`` creates the tensor (no synchronise), ``verify()`` checks it."""

    case: CreationCase
    device: Device
    run: Callable[[], None]
    out: list[Any]  # the tensor made by the last run()
    data: Any = None  # the host input of tensor_list / as_tensor, kept alive
    keep: list[Any] = field(default_factory=list)
    _want: list[Any] = field(default_factory=list, repr=False)

    def verify(self) -> None:
        """Synchronise, then check the last tensor (see the module docstring for what)."""
        synchronize(self.device)
        if not self.out:
            raise VerificationError(f"{self.case.label}: no tensor was created")
        if not self._want:  # the reference is made once: at 64 MiB it costs a creation
            self._want.append(reference(self.case, self.data))
        check_created(self.case, self.device, self.out[0], self._want[0])


def check_created(case: CreationCase, device: Device, got: Any, want: Any = None) -> None:
    """Raise VerificationError unless ``got`` is what ``case`` must create on ``device``;
    ``want`` is ``reference(case)`` when already made."""
    import torch

    if want is None:
        want = reference(case)
    where = got.device
    if where.type != device.type or (device.index is not None and where.index != device.index):
        raise VerificationError(f"{case.label}: tensor is on {where}, expected {device.name}")
    if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
        raise VerificationError(
            f"{case.label}: got {got.dtype} {tuple(got.shape)}, "
            f"expected {want.dtype} {tuple(want.shape)}"
        )
    if case.factory in RANDOM and not draws_on_host(case, device):
        # Drawn from the device's generator: no CPU reference exists for these numbers.
        ok = (bool(((got >= 0) & (got < 1)).all()) if case.factory == "rand"
              else bool(torch.isfinite(got).all()))
        if not ok:
            raise VerificationError(f"{case.label}: values outside the distribution's support")
        return
    host = got.to("cpu")
    if not torch.equal(host, want):
        bad = int((host != want).sum())
        raise VerificationError(
            f"{case.label}: {bad} of {want.numel()} elements differ from the CPU reference"
        )


def build_creation(case: CreationCase, device: str | Device = "auto") -> CreationWorkload:
    """Make the inputs for ``case`` (outside any timed region) and the creating callable."""
    dev = resolve_device(device)
    reason = creation_skip_reason(case, capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    # The device tensor; on the host the temporary, the input data and verify()'s reference
    # (on the CPU all of them are host memory).
    why = check_fits(case.nbytes, dev, copies=1 if dev.is_accelerator else 3, host_copies=3)
    if why:
        raise DoesNotFit(f"{case.label}: {why}")
    data = host_input(case)
    make = _maker(case, dev, data)
    tdev = dev.torch()
    out: list[Any] = []
    nb = case.variant == "to_non_blocking"

    if case.variant == "on_device":
        def run() -> None:
            # drop the last tensor first: one result alive at a time, as in a real loop
            out.clear()
            out.append(make(tdev))
    else:
        def run() -> None:
            out.clear()
            out.append(make(None).to(tdev, non_blocking=nb))

    return CreationWorkload(case, dev, run, out, data)


def run_creation(case: CreationCase, device: str | Device = "auto",
                 spec: MeasureSpec | None = None) -> Measurement:
    """Time ``case`` until its tensor is ready on the device, then verify the tensor.

    The clock is ``completion_s``: host time from the call to the end of its device work,
    read after a synchronise (what a user waits for before the tensor can be used).
    """
    work = build_creation(case, device)
    work.run()
    work.verify()  # a wrong first tensor fails before any number exists
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device, nbytes=case.nbytes,
                label=case.label, clock=READY_CLOCK)
    work.verify()
    return m


# -- the headline: on-device vs copied creation ----------------------------------------------

#: The factory quoted in the headline: the commonest "make it, then move it" in real code.
HEADLINE_FACTORY = "zeros"


@dataclass(frozen=True)
class CreationComparison:
    """``factory`` made on the device and made on the host then copied, at one size."""

    factory: str
    nbytes: int
    on_device: Measurement
    copied: Measurement

    @property
    def on_device_s(self) -> float:
        """Median seconds until the on-device tensor is ready (completion clock)."""
        return self.on_device.stats(READY_CLOCK).median

    @property
    def copied_s(self) -> float:
        """Median seconds until the copied tensor is ready (completion clock)."""
        return self.copied.stats(READY_CLOCK).median

    @property
    def ratio(self) -> float:
        """Copied over on-device time: above 1, making it on the host and copying costs more."""
        return self.copied_s / self.on_device_s


def compare_creation(device: str | Device = "auto", *, factory: str = HEADLINE_FACTORY,
                     nbytes: int = HEADLINE_NBYTES,
                     spec: MeasureSpec | None = None) -> CreationComparison:
    """The headline ratio: ``torch.f(..).to(dev)`` over ``torch.f(.., device=dev)``."""
    on_device = run_creation(CreationCase(factory, "on_device", nbytes), device, spec)
    copied = run_creation(CreationCase(factory, "to", nbytes), device, spec)
    return CreationComparison(factory, nbytes, on_device, copied)
