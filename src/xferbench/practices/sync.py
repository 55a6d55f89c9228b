"""Hidden synchronisation in a training loop: reading the loss every batch vs once per epoch.

Compared: the loss read with ``.item()`` every batch, every 10th batch, or accumulated on the
device and read once per epoch; the other reads that stall the host (``.cpu()``,
``.tolist()``, ``float(t)``, ``print(t)``, ``if t > 0:``, ``torch.nonzero``, boolean masks);
an explicit synchronise every step (``synchronize``: a drain with nothing read); and the
lagged read (``lagged``: the loss copied ``non_blocking`` into pinned memory behind an event,
read one step later), the fix for the per-batch read.

The loop is a fixed-seed MLP trained with SGD (momentum) on synthetic batches that already sit
on the device. One call of ``LoopWorkload.run`` is one epoch of ``steps`` steps; every epoch
starts from the same initial parameters and optimiser state, so every epoch of every variant
runs the same arithmetic and ends on the same parameters. That is what ``verify`` checks,
together with the values each variant read (the per-epoch loss must equal the sum of the
per-batch losses within fp32 tolerance).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..devices import (
    Capabilities,
    Device,
    capabilities,
    resolve_device,
    sync_debug_warnings,
    synchronize,
)
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from . import VerificationError, sweep
from .sync_reads import PER_BATCH, PER_EPOCH, READS, Reference, check_readings, readers

# torch loads inside the functions that need it: `import xferbench` stays free of it.

SEED = 1234
LR = 0.01
MOMENTUM = 0.9
OUT_DIM = 16
#: Steps per epoch (K) and batch size of the asv grid.
DEFAULT_STEPS = 20
DEFAULT_BATCH = 256
#: Hidden width: 256 keeps an epoch short on a CPU and is launch-bound on a large GPU (where
#: a stall costs most, relatively); the full sweep adds wider models whose
#: steps are compute-bound on a GPU.
DEFAULT_WIDTH = 256
FULL_WIDTHS = (256, 1024, 2048)

#: The message torch emits per synchronising call under set_sync_debug_mode("warn")
#: (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync).
SYNC_WARNING = "called a synchronizing CUDA operation"


def loop_widths() -> tuple[int, ...]:
    return FULL_WIDTHS if sweep() == "full" else (DEFAULT_WIDTH,)


@dataclass(frozen=True)
class LoopCase:
    read: str  # one of READS
    width: int = DEFAULT_WIDTH  # hidden width of the MLP
    depth: int = 3  # Linear layers
    batch: int = DEFAULT_BATCH
    steps: int = DEFAULT_STEPS  # K: steps per epoch

    def __post_init__(self) -> None:
        if self.read not in READS:
            raise XferbenchError(f"read {self.read!r} is not one of {', '.join(READS)}")
        for name in ("width", "depth", "batch", "steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise XferbenchError(f"{name} {value!r} is not valid: give a positive int")

    @property
    def label(self) -> str:
        return (f"loop {self.read} mlp{self.width}x{self.depth} b{self.batch} "
                f"k{self.steps}")


def loop_skip_reason(case: LoopCase, caps: Capabilities) -> str | None:
    """Why ``case`` has no number on ``caps.device``, or None. Every read but the lagged one
    runs everywhere (on the CPU it measures the read's own cost, no stall); the lagged read
    lags behind a device, through pinned memory."""
    if case.read != "lagged":
        return None
    if caps.device == "cpu":
        return ("the lagged read waits a step for a device's copy: on the CPU every copy is "
                "done when it returns, so there is nothing to lag behind")
    if not caps.pinned_memory:
        return (f"the lagged read copies into pinned memory, which {caps.device} lacks: "
                f"{caps.reason}")
    return None


def read_count_skip_reason(read: str, caps: Capabilities) -> str | None:
    """Why the synchronisations of ``read`` cannot be counted on ``caps.device``, or None:
    torch's sync debug mode does not report an explicit synchronise, so a count of the
    ``synchronize`` variant would read 0 for a drain every step."""
    if read == "synchronize":
        return ("torch's sync debug mode does not report an explicit synchronise: its count "
                "would read 0")
    return sync_count_skip_reason(caps)


def sync_count_skip_reason(caps: Capabilities) -> str | None:
    """Why host-device synchronisations cannot be counted on ``caps.device``, or None."""
    kind = caps.device.partition(":")[0]
    if kind == "cpu":
        return "the CPU has no host-device synchronisation to count"
    if kind != "cuda":
        return (f"no sync debug mode on {caps.device}: torch.cuda.set_sync_debug_mode "
                "exists for CUDA and ROCm only")
    return None


@dataclass
class LoopWorkload:
    """A built loop: ``run()`` trains one epoch (no final synchronise), ``verify()`` checks it."""

    case: LoopCase
    device: Device
    run: Callable[[], None]
    readings: list[Any]  # what the last epoch read, per variant (see verify)
    params: Callable[[], list[Any]]  # the model's parameters now
    reference: Reference
    initial: list[Any] = field(default_factory=list)  # parameters every epoch starts from
    keep: list[Any] = field(default_factory=list)

    def verify(self) -> None:
        """Synchronise, then check the parameters and what the last epoch read."""
        synchronize(self.device)
        check_params(self.case, self.params(), self.reference)
        check_readings(self.case.read, self.case.steps, self.case.label, self.readings,
                       self.reference)


def check_params(case: LoopCase, params: list[Any], ref: Reference) -> None:
    """The same arithmetic must give the same parameters, bit for bit, whatever was read."""
    import torch

    for i, (p, want) in enumerate(zip(params, ref.params)):
        got = p.detach().to("cpu")
        if not torch.equal(got, want):
            diff = float((got - want).abs().max())
            raise VerificationError(
                f"{case.label}: parameter {i} after {case.steps} steps differs from the "
                f"reference run (max |diff| {diff:.3g}): the reads changed the arithmetic"
            )


def _mlp(case: LoopCase, tdev: Any) -> Any:
    """The seeded MLP of ``case`` on ``tdev``."""
    import torch
    from torch import nn

    layers: list[Any] = []
    dims = [case.width] * case.depth + [OUT_DIM]
    # fork_rng: seed the weights without changing the caller's global random state
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        for i in range(case.depth):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < case.depth - 1:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers).to(tdev)


def _batches(case: LoopCase, tdev: Any) -> tuple[Any, Any]:
    """Inputs and targets of every step, on the device."""
    import torch

    gen = torch.Generator().manual_seed(SEED)
    # Targets from a fixed linear teacher, so that the loop has something to learn; batches
    # already on the device: no input copy in the loop, only the reads under test.
    xs = torch.randn(case.steps, case.batch, case.width, generator=gen)
    teacher = torch.randn(case.width, OUT_DIM, generator=gen) / case.width**0.5
    return xs.to(tdev), (xs @ teacher).to(tdev)


def _reference(steps: int, step: Callable[[int], tuple[Any, Any]], params: list[Any],
               dev: Device) -> Reference:
    """The reference epoch keeps every value on the device and reads them after the loop."""
    traced = [step(i) for i in range(steps)]
    synchronize(dev)
    return Reference(
        losses=[loss.item() for loss, _ in traced],
        per_sample=[ps.detach().to("cpu") for _, ps in traced],
        # copy=True: on the CPU .to("cpu") would alias the live parameters
        params=[p.detach().to("cpu", copy=True) for p in params],
    )


def build_loop(case: LoopCase, device: str | Device = "auto") -> LoopWorkload:
    """Model, optimiser and batches for ``case`` (seeded, on the device), and the reference."""
    import torch

    dev = resolve_device(device)
    reason = loop_skip_reason(case, capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    tdev = dev.torch()
    model = _mlp(case, tdev)
    params = list(model.parameters())
    initial = [p.detach().clone() for p in params]
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    xs, ys = _batches(case, tdev)

    def restart() -> None:
        # Same starting point every epoch: parameters and momentum (copies queued, no read).
        with torch.no_grad():
            for p, p0 in zip(params, initial):
                p.copy_(p0)
        opt.state.clear()

    def step(i: int) -> tuple[Any, Any]:
        pred = model(xs[i])
        per_sample = ((pred - ys[i]) ** 2).mean(dim=1)
        loss = per_sample.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, per_sample

    restart()
    reference = _reference(case.steps, step, params, dev)
    readings: list[Any] = []
    read, start, end = readers(case.read, readings, tdev, lambda: synchronize(dev), dev)
    steps = case.steps

    def run() -> None:
        readings.clear()
        restart()
        start()
        for i in range(steps):
            loss, ps = step(i)
            read(i, loss, ps)
        end()

    return LoopWorkload(case, dev, run, readings, lambda: params, reference, initial,
                        keep=[model, opt, xs, ys])


@dataclass(frozen=True)
class LoopResult:
    """One variant's measurement: ``measurement`` times whole epochs (completion clock)."""

    case: LoopCase
    measurement: Measurement
    syncs: int | None = None  # synchronisations counted in one epoch; None where not counted

    @property
    def step_samples(self) -> tuple[float, ...]:
        """Seconds per step, one per sample (each sample's epoch time divided by ``steps``)."""
        return tuple(s / self.case.steps for s in self.measurement.samples(LOOP_CLOCK))

    @property
    def step_s(self) -> float:
        """Median seconds per step."""
        return self.measurement.stats(LOOP_CLOCK).median / self.case.steps

    @property
    def steps_per_s(self) -> float:
        return 1.0 / self.step_s

    @property
    def syncs_per_step(self) -> float | None:
        return None if self.syncs is None else self.syncs / self.case.steps


#: Steps per second are read on the host clock with one synchronise at the end of the epoch.
LOOP_CLOCK = "completion_s"


def run_loop(case: LoopCase, device: str | Device = "auto", spec: MeasureSpec | None = None,
             *, count: bool = False) -> LoopResult:
    """Time whole epochs of ``case`` and verify them; with ``count``, also count the epoch's
    host-device synchronisations (where ``sync_count_skip_reason`` allows)."""
    work = build_loop(case, device)
    work.run()
    work.verify()  # a wrong first epoch fails before any number exists
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device, label=case.label,
                clock=LOOP_CLOCK)
    work.verify()
    syncs = count_syncs(work.run, work.device) if count else None
    if count:
        work.verify()
    return LoopResult(case, m, syncs)


def count_syncs(fn: Callable[[], Any], device: str | Device = "auto") -> int:
    """Host-device synchronisations one call of ``fn`` makes, counted by torch itself.

    Method: ``torch.cuda.set_sync_debug_mode("warn")`` makes every synchronising call
    (``.item()``, ``.cpu()``, ``nonzero``, stream synchronises; everything that goes through
    c10's ``memcpy_and_sync`` or ``stream_synchronize``) emit one UserWarning with
    SYNC_WARNING; they are recorded with ``warnings.catch_warnings`` and counted. Explicit
    ``torch.cuda.synchronize()`` is not reported by torch, so the synchronise around the call
    is not counted either. The previous debug mode is restored. CUDA and ROCm only.
    """

    dev = resolve_device(device)
    reason = sync_count_skip_reason(capabilities(dev))
    if reason:
        raise XferbenchError(f"sync count on {dev}: {reason}")
    synchronize(dev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # no de-duplication by call site: count every one
        with sync_debug_warnings(dev):
            fn()
    synchronize(dev)
    return count_sync_warnings(caught)


def count_sync_warnings(caught: list[Any]) -> int:
    """How many of the recorded warnings are torch's synchronisation warning."""
    return sum(1 for w in caught if SYNC_WARNING in str(w.message))


def syncs_per_step(case: LoopCase, device: str | Device = "auto") -> float:
    """Synchronisations per step of ``case`` (one counted epoch divided by ``steps``)."""
    work = build_loop(case, device)
    work.run()  # warm-up: first-call work (allocator, lazy init) is not the loop's
    work.verify()
    syncs = count_syncs(work.run, work.device)
    work.verify()
    return syncs / case.steps


# -- the headline: one read per epoch vs a read every batch ----------------------------------

@dataclass(frozen=True)
class SyncComparison:
    """The per-batch ``.item()`` loop and the per-epoch (device-accumulated) loop."""

    per_batch: LoopResult
    per_epoch: LoopResult

    @property
    def ratio(self) -> float:
        """Per-epoch steps/s over per-batch steps/s: above 1, reading every batch costs."""
        return self.per_epoch.steps_per_s / self.per_batch.steps_per_s


def compare_sync(device: str | Device = "auto", *, width: int = DEFAULT_WIDTH,
                 spec: MeasureSpec | None = None, count: bool | None = None) -> SyncComparison:
    """The headline ratio, with syncs per step where they can be counted (``count`` None:
    wherever ``sync_count_skip_reason`` allows)."""
    dev = resolve_device(device)
    if count is None:
        count = sync_count_skip_reason(capabilities(dev)) is None
    per_batch = run_loop(LoopCase(PER_BATCH, width=width), dev, spec, count=count)
    per_epoch = run_loop(LoopCase(PER_EPOCH, width=width), dev, spec, count=count)
    return SyncComparison(per_batch, per_epoch)


# -- the bare round trip: one .item() on an idle device ----------------------------------------

#: What the round trip reads back: a value a fresh allocation does not hold by chance.
ROUNDTRIP_VALUE = 7.25
#: Round trips are read on the enqueue clock: the call itself blocks until the value is home.
ROUNDTRIP_CLOCK = "enqueue_s"


def measure_item_roundtrip(device: str | Device = "auto",
                           spec: MeasureSpec | None = None) -> Measurement:
    """Seconds one ``.item()`` of a one-element device tensor takes from an idle device: the
    host asks, the device copies the value back, the host waits for it. Every call starts
    after a synchronise (the host batches of ``measure``); the value read is verified
    (VerificationError). An accelerator only."""
    import torch

    dev = resolve_device(device)
    if not dev.is_accelerator:
        raise XferbenchError(f".item() round trip on {dev}: the CPU has no device to wait for")
    value = torch.full((), ROUNDTRIP_VALUE, dtype=torch.float32, device=dev.torch())
    seen: list[float] = [value.item()]  # the first read pays for lazy initialisation

    def read() -> None:
        seen[0] = value.item()

    m = measure(read, spec or DEFAULT_SPEC, device=dev, label=".item() round trip",
                clock=ROUNDTRIP_CLOCK)
    if seen[0] != ROUNDTRIP_VALUE:
        raise VerificationError(f".item() on {dev} read {seen[0]!r}, not {ROUNDTRIP_VALUE}")
    return m
