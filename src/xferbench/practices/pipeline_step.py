"""The compute side of ``practices.pipeline``: the model and its training step, and the
input-starvation share with the stamps it is computed from.

The input-starvation share of a call of ``steps`` steps is the part of its time in which the
compute stream had finished the previous step and its batch was not yet there:

    wait_i   = ready_i - done_{i-1}        (done_{-1} = start)
    share    = sum_i wait_i / (done_{n-1} - start)

``start`` is stamped when the call begins, ``ready_i`` once step i's batch is on the device
(after the copy on the compute stream, or after the compute stream's wait for the prefetch
event) and just before the step's first kernel, ``done_i`` after its last kernel (the optimizer
step). On an accelerator the stamps are timing events recorded on the compute stream, so each
is the device's time of reaching that point: the gap between ``done_{i-1}`` and ``ready_i`` is
device time with no step to run, whether the host was still building the batch, the copy was
running on the compute stream, or the compute stream waited for the side stream's copy. On the
CPU the stamps are the host clock, which there is the device's: the share is the part of each
step spent getting the batch (the loader and the no-op move) rather than training on it.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..devices import Device, current_stream, new_event, synchronize
from ..errors import XferbenchError

# torch loads inside the functions that need it: `import xferbench` stays free of it.

LR = 0.01
MOMENTUM = 0.9
OUT_DIM = 16
#: Stamps may run backwards by this much (the timing events' resolution) before it is an error.
STAMP_SLACK_S = 1e-6


def starvation_waits(start: float, ready: Sequence[float],
                     done: Sequence[float]) -> list[tuple[float, float]]:
    """Per step, (seconds waited for the batch, seconds from the previous step's end to this
    one's): ``(ready_i - done_{i-1}, done_i - done_{i-1})`` with ``done_{-1} = start``. All
    stamps in seconds on one clock; they must come in order (start, ready_0, done_0, ...)."""
    if len(ready) != len(done) or not ready:
        raise XferbenchError(f"{len(ready)} ready and {len(done)} done stamps: need one of "
                             "each per step, at least one step")
    order = [start] + [t for pair in zip(ready, done) for t in pair]
    for k, (a, b) in enumerate(zip(order, order[1:])):
        if b < a - STAMP_SLACK_S:
            raise XferbenchError(f"stamp {k + 1} ({b:.9f} s) comes before stamp {k} "
                                 f"({a:.9f} s): the stamps are not in step order")
    out = []
    previous = start
    for r, d in zip(ready, done):
        out.append((max(0.0, r - previous), max(0.0, d - previous)))
        previous = d
    return out


def starvation_share(start: float, ready: Sequence[float], done: Sequence[float]) -> float:
    """The share of the call's time in which the device waited for its batch: the waits
    summed over the steps, divided by the call's time (0: never waited; 1: never computed)."""
    waits = starvation_waits(start, ready, done)
    total = sum(period for _wait, period in waits)
    if total <= 0:
        raise XferbenchError("the stamps span no time: a call needs a positive duration")
    return sum(wait for wait, _period in waits) / total


def starvation_shares(start: float, ready: Sequence[float],
                      done: Sequence[float]) -> list[float]:
    """Each step's own share: its wait over its period (0 for a period of no time)."""
    return [w / p if p > 0 else 0.0 for w, p in starvation_waits(start, ready, done)]


class Stamps:
    """``start``, then ``ready(i)`` and ``done(i)`` per step: timing events on the compute
    stream of an accelerator (all created here, before the call), the host clock on the CPU.
    ``times()`` synchronises and returns (start, ready, done) in seconds from ``start``."""

    def __init__(self, device: Device, steps: int) -> None:
        self.device = device
        n = 2 * steps + 1
        self.events = [new_event(device) for _ in range(n)] if device.is_accelerator else []
        self.stream = current_stream(device) if device.is_accelerator else None
        self.host = [0.0] * n

    def _mark(self, k: int) -> None:
        if self.events:
            self.events[k].record(self.stream)
        else:
            self.host[k] = time.perf_counter()

    def start(self) -> None:
        self._mark(0)

    def ready(self, i: int) -> None:
        self._mark(1 + 2 * i)

    def done(self, i: int) -> None:
        self._mark(2 + 2 * i)

    def times(self) -> tuple[float, list[float], list[float]]:
        if self.events:
            synchronize(self.device)
            first = self.events[0]
            t = [0.0] + [first.elapsed_time(e) * 1e-3 for e in self.events[1:]]
        else:
            t = [x - self.host[0] for x in self.host]
        return t[0], t[1::2], t[2::2]


@dataclass(frozen=True)
class ModelSize:
    """An MLP over the 2x2-pooled image (3 x 32 x 32 features), plus the mean of the tokens'
    embeddings (a frozen table: the step stays bit-for-bit repeatable on a GPU without
    deterministic mode), into a linear head."""

    width: int
    depth: int
    in_features: int = 3 * 32 * 32

    @property
    def parameters(self) -> int:
        w = self.width
        return (self.in_features * w + w + (self.depth - 1) * (w * w + w)
                + w * OUT_DIM + OUT_DIM)

    @property
    def parameter_bytes(self) -> int:
        return 4 * self.parameters


@functools.lru_cache(maxsize=2)
def initial_state(size: ModelSize, vocab: int, classes: int, seed: int) -> tuple[Any, ...]:
    """Seeded host tensors every build starts from (weights, biases, then the embedding table
    and the targets per class); kept per process, since the large model's 360M values take
    about a second to draw."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    dims = [size.in_features] + [size.width] * size.depth
    out = []
    for fan_in, fan_out in [*zip(dims, dims[1:]), (size.width, OUT_DIM)]:
        bound = fan_in ** -0.5  # nn.Linear's default range
        out.append(torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=gen))
        out.append(torch.empty(fan_out).uniform_(-bound, bound, generator=gen))
    out.append(torch.randn(vocab, size.width, generator=gen))
    out.append(torch.randn(classes, OUT_DIM, generator=gen))
    return tuple(out)


@functools.cache
def warm_compiler(device: str) -> None:
    """Compile a one-line function on ``device`` once per process: the compiler's imports and
    set-up (seconds, once per process) are then not in any configuration's compile time."""
    import torch

    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device=device))
    torch.compiler.reset()


def compile_first_step(step: Any, batch: Any, dev: Device) -> float:
    """Seconds of the first call of a compiled ``step``, synchronised: dynamo, AOTAutograd
    (forward and backward) and inductor on this graph, cold: inductor's caches, on disk as in
    memory, are off for this call, so that the figure is the same on a second run."""
    import torch._inductor.config as inductor_config

    cold = (inductor_config.patch(force_disable_caches=True)
            if hasattr(inductor_config, "force_disable_caches") else contextlib.nullcontext())
    with cold, warnings.catch_warnings():
        # what the caches being off turns off says so once ("dynamo_pgo force disabled by
        # ...force_disable_caches"): asked for, so not worth a warning
        warnings.filterwarnings("ignore", message=".*force_disable_caches", category=UserWarning)
        t0 = time.perf_counter()
        step(batch)
        synchronize(dev)
        return time.perf_counter() - t0


def _modules(size: ModelSize, tdev: Any, vocab: int) -> Any:
    """The model's modules on ``tdev``, uninitialised: ``restart`` copies the state in."""
    import torch
    from torch import nn

    layers: list[Any] = []
    dims = [size.in_features] + [size.width] * size.depth
    for fan_in, fan_out in zip(dims, dims[1:]):
        layers += [nn.Linear(fan_in, fan_out, device=tdev), nn.ReLU()]
    model = nn.ModuleDict({
        "image": nn.Sequential(*layers),
        "head": nn.Linear(size.width, OUT_DIM, device=tdev),
    })
    # the token table is a frozen buffer (no embedding backward), not an nn.Embedding
    model.register_buffer("tokens", torch.empty(vocab, size.width, device=tdev))
    return model


def build_model(size: ModelSize, dev: Device, *, amp_dtype: Any, compiled: bool,
                features: tuple[int, ...], vocab: int, classes: int,
                seed: int) -> tuple[Any, Any, Any, Any]:
    """(model, step(batch), restart(), params()) on ``dev``, made there directly (the meta
    device's ops import sympy, slowly). ``restart`` copies the seeded initial state in and
    clears the momentum; ``amp_dtype`` is the autocast dtype, None for full precision."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    if features != (3, 64, 64):
        raise XferbenchError(f"images of shape {features} do not pool to {size.in_features} "
                             "features: the model takes 3 x 64 x 64")
    tdev = dev.torch()
    model = _modules(size, tdev, vocab)
    targets = torch.empty(classes, OUT_DIM, device=tdev)
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    state = [t for m in linear for t in (m.weight, m.bias)] + [model.tokens, targets]
    initial = initial_state(size, vocab, classes, seed)
    trained = list(model.parameters())
    momentum: list[Any] = []

    def forward(batch: dict[str, Any]) -> Any:
        x = F.avg_pool2d(batch["images"].float() / 255.0, 2).flatten(1)
        h = model["image"](x) + F.embedding(batch["tokens"], model.tokens).mean(dim=1)
        return model["head"](torch.relu(h))

    if compiled:
        warm_compiler(dev.name)
        # Forget what an earlier build compiled: dynamo would find this forward's code in its
        # cache, and the first compiled step would be a cache hit.
        torch.compiler.reset()
    fwd = torch.compile(forward) if compiled else forward

    def step(batch: dict[str, Any]) -> None:
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            pred = fwd(batch)
        loss = ((pred.float() - targets[batch["labels"]]) ** 2).mean()
        loss.backward()
        # SGD with momentum (torch.optim.SGD's arithmetic, written out: torch.optim imports
        # torch._dynamo on first use, a slow import in every benchmark process)
        with torch.no_grad():
            if not momentum:
                momentum.extend(p.grad.clone() for p in trained)
            else:
                for buf, p in zip(momentum, trained):
                    buf.mul_(MOMENTUM).add_(p.grad)
            for buf, p in zip(momentum, trained):
                p.add_(buf, alpha=-LR)
                p.grad = None

    def restart() -> None:
        with torch.no_grad():
            for t, t0 in zip(state, initial):
                t.copy_(t0)
        momentum.clear()

    return model, step, restart, lambda: [*model.parameters(), model.tokens]
