"""Masks and positions made inside ``forward``: built on the host and moved every call, built
with ``device=x.device``, or registered buffers. The second suspect behind "expected all
tensors on the same device", and a host-to-device copy hidden in every step.

``ForwardCase`` is the identity of the measurement; ``build_forward`` makes the module, its
seeded weights and input outside any timed region; ``run_forward`` times one forward on the
completion clock and checks that the output equals the registered-buffer module's bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..devices import Capabilities, Device, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from . import VerificationError, sweep
from .creation import READY_CLOCK, SEED

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: host_then_move: built on the host then .to(x.device) in every forward; device_arg: built
#: with device=x.device in every forward; buffer: built once, a registered buffer.
FORWARD_MODES = ("host_then_move", "device_arg", "buffer")
DEFAULT_FORWARD_SEQ = 512
FULL_FORWARD_SEQS = (128, 512, 2048)
FORWARD_BATCH = 4
FORWARD_DIM = 64


def forward_seqs() -> tuple[int, ...]:
    return FULL_FORWARD_SEQS if sweep() == "full" else (DEFAULT_FORWARD_SEQ,)


@dataclass(frozen=True)
class ForwardCase:
    mode: str  # one of FORWARD_MODES
    seq: int = DEFAULT_FORWARD_SEQ  # sequence length T: the mask is T x T, positions T

    def __post_init__(self) -> None:
        if self.mode not in FORWARD_MODES:
            raise XferbenchError(f"mode {self.mode!r} is not one of {', '.join(FORWARD_MODES)}")
        if self.seq <= 0:
            raise XferbenchError(f"seq {self.seq} is not a sequence length: give a positive int")

    @property
    def label(self) -> str:
        return f"forward {self.mode} T={self.seq}"


def forward_skip_reason(case: ForwardCase, caps: Capabilities) -> str | None:
    """All three modes run everywhere: on the CPU host_then_move is creation plus a no-op move."""
    return None


def make_forward_module(mode: str, seq: int, dim: int = FORWARD_DIM) -> Any:
    """A causal self-attention with learned positions, whose causal mask and position ids are
    made per ``mode``: the second suspect behind "expected all tensors on the same device"."""
    import torch
    from torch import nn

    class CausalMix(nn.Module):
        mask: torch.Tensor  # buffers, where ``mode`` is "buffer"
        pos: torch.Tensor

        def __init__(self) -> None:
            super().__init__()
            self.pos_emb = nn.Embedding(seq, dim)
            if mode == "buffer":
                # persistent=False: derived data, kept out of the state_dict
                self.register_buffer(
                    "mask", torch.ones(seq, seq, dtype=torch.bool).triu(1), persistent=False)
                self.register_buffer("pos", torch.arange(seq), persistent=False)

        def forward(self, x: Any) -> Any:
            t = x.shape[1]
            if mode == "buffer":
                mask, pos = self.mask[:t, :t], self.pos[:t]
            elif mode == "device_arg":
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                pos = torch.arange(t, device=x.device)
            else:
                mask = torch.ones(t, t, dtype=torch.bool).triu(1).to(x.device)
                pos = torch.arange(t).to(x.device)
            h = x + self.pos_emb(pos)
            scores = (h @ h.transpose(1, 2)) / dim**0.5
            return scores.masked_fill(mask, float("-inf")).softmax(-1) @ h

    return CausalMix()


@dataclass
class ForwardWorkload:
    case: ForwardCase
    device: Device
    run: Callable[[], None]
    out: list[Any]
    expected: Any  # the output of the buffer module on the same input (host copy)

    def verify(self) -> None:
        """Synchronise, then check the output equals the buffer module's bit for bit."""
        import torch

        synchronize(self.device)
        if not self.out:
            raise VerificationError(f"{self.case.label}: forward produced nothing")
        got = self.out[0].to("cpu")
        if got.shape != self.expected.shape or not torch.equal(got, self.expected):
            raise VerificationError(
                f"{self.case.label}: the output differs from the registered-buffer module's"
            )


def build_forward(case: ForwardCase, device: str | Device = "auto") -> ForwardWorkload:
    """Module, weights and input for ``case``, all seeded, made outside any timed region."""
    import torch

    dev = resolve_device(device)
    tdev = dev.torch()
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(FORWARD_BATCH, case.seq, FORWARD_DIM, generator=gen).to(tdev)

    def module(mode: str) -> Any:
        torch.manual_seed(SEED)  # same weights in every mode
        return make_forward_module(mode, case.seq).to(tdev).eval()

    with torch.no_grad():
        expected = module("buffer")(x).to("cpu")
    mod = module(case.mode)
    out: list[Any] = []

    def run() -> None:
        with torch.no_grad():
            out.clear()
            out.append(mod(x))

    return ForwardWorkload(case, dev, run, out, expected)


def run_forward(case: ForwardCase, device: str | Device = "auto",
                spec: MeasureSpec | None = None) -> Measurement:
    """Time one forward (completion: synchronised host clock) and verify its output."""
    work = build_forward(case, device)
    work.run()
    work.verify()
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device, label=case.label,
                clock=READY_CLOCK)
    work.verify()
    return m
