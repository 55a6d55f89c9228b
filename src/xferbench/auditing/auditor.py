"""``xferbench.audit()``: what a training step really copies and waits for, counted while it
runs and priced with the suite's measurements.

    with xferbench.audit() as a:
        for batch in loader:
            train_step(batch)          # a step ends at each optimizer step, or at a.step()
    print(a)                           # the report: per step, on average, in total, priced
    assert a.per_step.syncs <= 1       # budgets a test can assert

The counting is ``xferbench.auditing``'s (core layer); the report and its prices are
``audit_report``'s. The same object serves the ``xferbench audit`` command and the
``xfer_audit`` pytest fixture.
"""

from __future__ import annotations

from typing import Any

from ..analysis.prices import PriceBook
from ..device_watch import sync_debug_count
from ..devices import Device, resolve_device
from ..errors import XferbenchError
from .counts import Counts
from .events import Event
from .modes import Watch
from .recorder import Recorder
from .report import AuditReport, build_report
from .steps import Segments, segment


class Audit:
    """The audit of the code run inside ``with``; see the module's docstring.

    ``device``: the device the audit reports for ("auto": the accelerator PyTorch reports,
    else the CPU, where the waits an accelerator would pay are reported, marked as not paid).
    ``steps``: stop counting after this many steps. ``results``: price from this results
    folder (default: the price table shipped with xferbench). ``sync_debug``: on CUDA, count
    torch's own sync debug mode beside the audit as a cross-check.
    """

    def __init__(self, *, device: str | Device | None = None, steps: int | None = None,
                 results: str | None = None, sync_debug: bool = True) -> None:
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)
                                  or steps <= 0):
            raise XferbenchError(f"steps {steps!r} is not a number of steps: give a whole "
                                 "number above 0")
        self._device_spec = device if device is not None else "auto"
        self.limit = steps
        self.results = results
        self._sync_debug_wanted = sync_debug
        self.device: Device | None = None
        self.active = False
        self._recorder: Recorder | None = None
        self._watch: Watch | None = None
        self._debug: Any = None
        self._debug_count: list[int] | None = None

    # -- running -------------------------------------------------------------------------

    def __enter__(self) -> Audit:
        if self.active:
            raise XferbenchError("this audit is running already: use a new xferbench.audit()")
        self.device = resolve_device(self._device_spec)
        self._recorder = Recorder(cpu_mode=not self.device.is_accelerator, limit=self.limit)
        self._watch = Watch(self._recorder)
        self._recorder.on_stop = self._watch.release_modes
        if self._sync_debug_wanted and self.device.type == "cuda":
            self._debug = sync_debug_count(self.device)
            self._debug_count = self._debug.__enter__()
        self._watch.start()
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.active:
            return
        assert self._watch is not None
        self._watch.stop()
        if self._debug is not None:
            self._debug.__exit__(None, None, None)
            self._debug = None
        self.active = False

    def step(self) -> None:
        """Mark the end of a step here. Once called, only these marks end steps (the
        optimizer's are ignored)."""
        self._require().mark("manual")

    def reset(self) -> None:
        """Forget what was counted so far (the test's setup, say); tensors already seen
        keep what is known of them."""
        rec = self._require()
        rec.events.clear()
        rec.marks.clear()
        rec.notes.clear()
        if self._debug_count is not None:
            self._debug_count[0] = 0

    # -- what was counted ------------------------------------------------------------------

    @property
    def segments(self) -> Segments:
        rec = self._require()
        return segment(rec.events, rec.marks, self.limit)

    @property
    def steps(self) -> list[Counts]:
        """Each step's counts, in order (one step when no boundary was seen)."""
        return [Counts.of(s) for s in self.segments.steps]

    @property
    def per_step(self) -> Counts:
        """The mean of each figure over the steps."""
        return Counts.combine(self.steps, "mean")

    @property
    def max_per_step(self) -> Counts:
        """The largest value of each figure in any one step."""
        return Counts.combine(self.steps, "max")

    @property
    def total(self) -> Counts:
        """Every step together, and what ran after the last one."""
        seg = self.segments
        return Counts.of([e for s in seg.steps for e in s] + list(seg.after))

    @property
    def events(self) -> list[Event]:
        seg = self.segments
        return [e for s in seg.steps for e in s] + list(seg.after)

    @property
    def notes(self) -> list[str]:
        """The notes added to device-mismatch errors raised under the audit."""
        return list(self._require().notes)

    @property
    def stopped(self) -> bool:
        """Counting stopped at the step limit."""
        return self._require().stopped

    @property
    def aten_calls(self) -> int:
        return self._require().aten_calls

    @property
    def sync_debug_count(self) -> int | None:
        """Synchronisations torch's sync debug mode reported (CUDA only), else None."""
        return None if self._debug_count is None else self._debug_count[0]

    # -- the report ------------------------------------------------------------------------

    def report(self, book: PriceBook | None = None) -> AuditReport:
        """The priced report (prices from ``book``, else from ``results`` or the shipped
        table)."""
        return build_report(self, book)

    def __str__(self) -> str:
        return "\n".join(self.report().lines())

    def _require(self) -> Recorder:
        if self._recorder is None:
            raise XferbenchError("this audit has not run: use it as `with xferbench.audit() "
                                 "as a:`")
        return self._recorder


def audit(*, device: str | Device | None = None, steps: int | None = None,
          results: str | None = None, sync_debug: bool = True) -> Audit:
    """An ``Audit`` to use as ``with xferbench.audit() as a:``; see ``Audit``."""
    return Audit(device=device, steps=steps, results=results, sync_debug=sync_debug)
