"""The audit's own cost: host time added per aten call and per training step, measured with
and without the audit on the same work (``scripts/audit-overhead`` prints it).

Three workloads on the CPU (the audit's handlers are host code, so their cost is the same
on any device; on a GPU it is hidden where the step waits for kernels anyway and paid in
full where the step is launch-bound):
- ``op``: one small aten op (``torch.mul`` of 16 floats): the price of a call the audit
  only passes through (the function mode, the dispatch mode, the classification);
- ``read``: ``.item()`` of a one-element tensor: a call the audit records (a wait: the
  user's line found by walking the stack, an event appended);
- ``step``: a small MLP training step (forward, backward, SGD step): what a step pays;
and ``floor``: the ``op`` under two modes that do nothing but pass each call on, what
PyTorch's mode machinery costs by itself.
Each is timed in blocks of ``calls`` calls, ``repeats`` times, a plain block and an audited
one in turn; the added time is the median of the paired differences (drift on a shared machine
hits both blocks of a pair alike), shown with the medians and spreads of both. torch runs on
one thread (``--threads``): the audit's handlers are single-threaded host code, and one
thread keeps the load of a busy machine's other processes out of the step.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..units import format_seconds
from .modes import Watch
from .recorder import Recorder

# torch loads inside the functions that need it: the package imports without it.


@dataclass(frozen=True)
class Overhead:
    """One workload, plain and audited: seconds per call (medians over blocks)."""

    name: str
    plain_s: list[float]
    audited_s: list[float]
    aten_calls: float  # aten calls per call of the workload, as the audit counted them

    @property
    def plain(self) -> float:
        return statistics.median(self.plain_s)

    @property
    def audited(self) -> float:
        return statistics.median(self.audited_s)

    @property
    def added_s(self) -> float:
        """The median of the paired differences (each audited block minus the plain block
        timed just before it): drift on a shared machine cancels within a pair."""
        return statistics.median(a - p for a, p in zip(self.audited_s, self.plain_s))

    @property
    def per_aten_call_s(self) -> float:
        return self.added_s / self.aten_calls if self.aten_calls else float("nan")

    @staticmethod
    def spread(samples: list[float]) -> float:
        """Interquartile range over median."""
        q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
        return (q[2] - q[0]) / q[1] if q[1] else 0.0


def _workloads() -> dict[str, Callable[[], Any]]:
    import torch

    torch.manual_seed(0)
    a = torch.randn(16)
    one = torch.randn(1)
    width, batch = 256, 64
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 16))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, width), torch.randn(batch, 16)

    def step() -> None:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return {"op": lambda: torch.mul(a, 2), "read": lambda: one.item(), "step": step}


def measure(calls: int = 2000, repeats: int = 15, step_calls: int = 20,
            names: tuple[str, ...] = ("op", "read", "step")) -> list[Overhead]:
    """Each workload's seconds per call, plain and audited (see the module)."""
    work = _workloads()
    out = []
    for name in names:
        fn = work[name]
        n = step_calls if name == "step" else calls
        for watched in (False, True):  # warm-up: first calls allocate and import, both ways
            _timed(fn, max(n // 10, 2), watched)
        plain, audited, aten = [], [], []
        for _ in range(repeats):
            plain.append(_timed(fn, n, False)[0])
            seconds, recorder = _timed(fn, n, True)
            audited.append(seconds)
            aten.append(recorder.aten_calls / n)
        out.append(Overhead(name, plain, audited, statistics.median(aten)))
    return out


def _timed(fn: Callable[[], Any], n: int, watched: bool) -> tuple[float, Recorder]:
    """Seconds per call of ``n`` calls, under a fresh audit (its recorder returned) or not;
    installing and removing the audit stays outside the timed loop."""
    recorder = Recorder(cpu_mode=True)
    watch = Watch(recorder)
    if watched:
        watch.start()
    try:
        started = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - started
    finally:
        if watched:
            watch.stop()
    return elapsed / n, recorder


def floor(calls: int = 2000, repeats: int = 15) -> Overhead:
    """The ``op`` workload under two modes that only pass each call on: what PyTorch's mode
    machinery itself costs, the floor under the audit's own handlers."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassFunction(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    class PassDispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    fn = _workloads()["op"]
    plain, passed = [], []
    for _ in range(repeats):
        plain.append(_timed(fn, calls, False)[0])
        with PassFunction(), PassDispatch():
            passed.append(_timed(fn, calls, False)[0])
    return Overhead("floor", plain, passed, 1.0)


def format_overheads(results: list[Overhead]) -> list[str]:
    lines = [f"{'workload':<8} {'plain':>12} {'audited':>12} {'added':>12} {'aten calls':>11} "
             f"{'added per aten call':>20}"]
    for r in results:
        lines.append(
            f"{r.name:<8} {format_seconds(r.plain):>12} {format_seconds(r.audited):>12} "
            f"{format_seconds(r.added_s):>12} {r.aten_calls:>11.1f} "
            f"{format_seconds(r.per_aten_call_s):>20}"
            f"   (spread {Overhead.spread(r.plain_s):.0%} / {Overhead.spread(r.audited_s):.0%})")
    lines.append("seconds per call, medians over blocks; added: the median of paired "
                 "differences; spread: IQR/median of the blocks")
    return lines
