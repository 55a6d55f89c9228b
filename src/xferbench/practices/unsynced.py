"""An unsynchronised host timer against the real time: what ``time.perf_counter()`` around
device work reports when nothing synchronises before the clock is read, and what it reports
when the device is synchronised first (the real time), from the same calls.

The work is a chain of ``CHAIN`` matmuls of an n x n float32 matrix whose every element is
1/n (n a power of two, so each product is that matrix again, exactly, in any precision).
Each call starts from an idle device (``measure``'s completion clock): the clock is read
once the call returns (``enqueue_s``: the unsynchronised reading) and again after a
synchronise (``completion_s``: the real time). Their ratio, real / unsynchronised, is the
factor by which the naive timer under-reports. Verified: the chain's result is checked
element by element before and after the measurement.

On the CPU there is nothing to measure: each call returns when its work is done, so an
unsynchronised host timer reads the real time (a factor of 1 by construction), and the
practice is skipped at discovery saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from . import VerificationError, sweep

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: Matmuls queued per timed call.
CHAIN = 8
#: Matrix sizes: 1024, whose chain is short enough on a large GPU that kernel launches are a
#: large share of it, and 4096, whose work dwarfs the launches (64 times the arithmetic).
DEFAULT_SIZES = (1024, 4096)
FULL_SIZES = (256, 1024, 4096)
SMOKE_SIZES = (256,)
#: The largest matrix tried on an emulated device, whose matmuls run on the host's CPU.
EMULATED_MAX_N = 256
#: The clocks read: the timer as a user reads it without a synchronise, and the real time.
UNSYNCED_CLOCK = "enqueue_s"
SYNCED_CLOCK = "completion_s"
CPU_REASON = ("an unsynchronised timer needs an accelerator to read wrong: on the CPU each "
              "call returns when its work is done, so the host clock reads the real time "
              "(a factor of 1 by construction)")


def timer_sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": SMOKE_SIZES}.get(sweep(), DEFAULT_SIZES)


def timer_skip_reason(n: int, caps: Capabilities) -> str | None:
    """Why the chain of ``n`` x ``n`` matmuls is not timed on a device with ``caps``."""
    if n <= 0 or n & (n - 1):
        return f"n={n} is not a power of two: the chain's exact result needs one"
    if caps.device == "cpu":
        return CPU_REASON
    if caps.emulated and n > EMULATED_MAX_N:
        return (f"on {caps.device}, emulated on the host, a {n}x{n} matmul runs on the CPU "
                f"(tried up to {EMULATED_MAX_N})")
    return None


@dataclass
class MatmulChain:
    """``CHAIN`` matmuls of ``a`` into two buffers in turn; ``run()`` queues them (no
    synchronise), ``verify()`` checks the last product."""

    device: Device
    n: int
    a: Any
    buffers: list[Any]

    def run(self) -> None:
        import torch

        src = self.a
        for i in range(CHAIN):
            dst = self.buffers[i % 2]
            torch.matmul(src, self.a, out=dst)
            src = dst

    def verify(self) -> None:
        synchronize(self.device)
        last = self.buffers[(CHAIN - 1) % 2]
        if not bool(last.eq(1.0 / self.n).all()):
            raise VerificationError(f"the chain of {CHAIN} {self.n}x{self.n} matmuls on "
                                    f"{self.device} did not give the matrix of 1/{self.n}")


def build_chain(n: int, device: str | Device = "auto") -> MatmulChain:
    """The matrices, allocated and filled outside any timed region."""
    import torch

    dev = resolve_device(device)
    reason = timer_skip_reason(n, capabilities(dev))
    if reason:
        raise XferbenchError(f"the unsynchronised timer on {dev}: {reason}")
    nbytes = n * n * 4
    why = check_fits(nbytes, dev, copies=3)
    if why:
        raise DoesNotFit(f"{n}x{n} matmul chain: {why}")
    a = torch.full((n, n), 1.0 / n, dtype=torch.float32, device=dev.torch())
    buffers = [torch.empty_like(a), torch.empty_like(a)]
    synchronize(dev)
    return MatmulChain(dev, n, a, buffers)


def run_unsynced(n: int, device: str | Device = "auto",
                 spec: MeasureSpec | None = None) -> Measurement:
    """The chain of ``n`` x ``n`` matmuls timed on the completion clock: its ``enqueue_s``
    samples are what an unsynchronised timer reads, its ``completion_s`` the real time."""
    work = build_chain(n, device)
    work.run()
    work.verify()  # a wrong product fails before any number exists
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device,
                label=f"{CHAIN} matmuls of {n}x{n}", clock=SYNCED_CLOCK)
    work.verify()
    return m


def under_report_factor(m: Measurement) -> float:
    """The median real time over the median unsynchronised reading."""
    return m.stats(SYNCED_CLOCK).median / m.stats(UNSYNCED_CLOCK).median
