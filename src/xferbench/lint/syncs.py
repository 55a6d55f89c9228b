"""Synchronisation and clocks: the state the sequential rules keep (device work queued, a
synchronise seen), the timing rule (XB107: a clock that ends an interval around work nothing
synchronised) and the explicit synchronise every training step (XB109: a full drain of the
device that no timing measurement needs)."""

from __future__ import annotations

import ast
import re

from .facts import dotted, terminal

#: A helper that synchronises, by its name: synchronize_all(), sync(), cuda_sync(), _sync().
_SYNC = re.compile(r"synchron|^_*(?:sync|cuda_sync|sync_cuda|device_sync|sync_device|gpu_sync|"
                   r"sync_gpu|torch_sync|maybe_sync|mark_step|wait_device_ops)$")
#: A call that reads a timer or an event (start.elapsed_time(end), timer.stop()).
_TIMING = re.compile(r"time|tic$|^toc|elapsed|clock|lap$|stopwatch|profil|bench")
#: A timer of data loading: data_time, start_data_loading, load_start, data_timer.
_DATA_TIMER = re.compile(r"data_?(?:load(?:ing)?_?)?(?:time|start|tic)|"
                         r"load(?:ing)?_?(?:time|start)|start_data|data_?timer")
#: The devices a branch's test may name, most specific first.
DEVICES = ("mps", "xpu", "npu", "hpu", "cuda", "cpu")
#: What a finding of XB107 advises on each: the device's own synchronise.
ADVICE = {"mps": "torch.mps.synchronize()", "xpu": "torch.xpu.synchronize()"}


def sync_name(name: str) -> bool:
    """Whether a helper called ``name`` synchronises."""
    return bool(_SYNC.search(name.lower()))


def data_timer_name(node: ast.expr) -> bool:
    """``data_time``, ``epoch_meters.data_time``, ``data_timer``: a meter of data loading."""
    return bool(_DATA_TIMER.search((terminal(node) or "").lower()))


def timing_name(node: ast.expr) -> bool:
    return bool(_TIMING.search((terminal(node) or "").lower()))


def timing_test(test: ast.expr) -> bool:
    """``if profiling_enabled:``, ``if args.benchmark:``, ``if self.timers:``: a branch that
    measures."""
    return any(isinstance(n, (ast.Name, ast.Attribute)) and _MEASURE.search(
        (terminal(n) or "").lower()) for n in ast.walk(test))


#: A flag or an object for measuring: profile, timing, timer, benchmark, wall_clock.
_MEASURE = re.compile(r"profil|timing|timer|bench|wall_clock|measure")


def branch_device(test: ast.expr) -> tuple[str | None, str | None]:
    """The device each branch of ``if test:`` runs on, as far as the test names one:
    ``if device == "mps":`` -> ("mps", "other"); ``if dev != "cuda":`` -> ("other", "cuda")."""
    for node in ast.walk(test):
        text = node.value if isinstance(node, ast.Constant) else (
            terminal(node) if isinstance(node, (ast.Name, ast.Attribute)) else None)
        if not isinstance(text, str):
            continue
        low = text.lower()
        found = next((d for d in DEVICES if d == low or isinstance(node, (
            ast.Name, ast.Attribute)) and d != "cpu" and d in low), None)
        if found is None:
            continue
        negated = isinstance(test, ast.Compare) and any(
            isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)) for op in test.ops) or (
            isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not))
        return ("other", found) if negated else (found, "other")
    return None, None


class Syncs:
    """Synchronise and clock bookkeeping, mixed into the analyser."""

    def __init__(self) -> None:
        super().__init__()
        self.branch_devices: list[str | None] = []  # per open branch: the device it runs on
        self.timing_scopes = 0  # measurements open: with timer(...):, if profiling:
        self.data_timer = False  # walking the arguments of data_time.update(...)

    def timing_scope(self, items: list) -> bool:
        """Whether ``with <items>:`` opens a measurement (``timeit("step")``,
        ``record_function(...)``, ``Timer()``); counted in ``timing_scopes`` if so."""
        timed = any(isinstance(i.context_expr, ast.Call) and timing_name(i.context_expr.func)
                    or "record_function" in ast.dump(i.context_expr)[:200] for i in items)
        self.timing_scopes += timed
        return timed

    # -- device work and synchronisation --------------------------------------------------------

    def device_work(self, light: bool = False) -> None:
        """Work queued on the device; ``light``: a fill or a copy (a setup's, unless in a
        loop), not computation a timer is meant to measure."""
        frame = self.frame
        frame.work = frame.devicey = True
        frame.fresh_sync = False
        if not light or frame.loops:
            frame.heavy = True
        if not light:
            frame.open_sync = None  # work a timer after it would not be measuring alone

    def synced(self, explicit: bool = False) -> None:
        frame = self.frame
        self.sync_count += 1
        fn = self.function_name()
        if fn is not None:
            self.sync_fns.add(fn)
        frame.work = frame.heavy = False
        frame.fresh_sync = explicit
        for loop in frame.loops:
            loop.synced = True
        for rec in frame.d2h.values():
            rec.live = False
        frame.d2h.clear()

    def drained(self, node: ast.Call) -> None:
        """An explicit synchronise of the whole device (``torch.cuda.synchronize()``, the
        current stream's): a candidate of XB109 unless a clock read follows it."""
        self.synced(explicit=True)
        frame = self.frame
        if self.once or not (frame.loops or self.function_name()):
            return
        what = ast.unparse(node.func)
        if len(what) > 40:
            what = "the synchronize"
        record = [self.timing_scopes > 0]  # set when a timer reads after it: it is needed
        self.candidate("XB109", node, f"`{what}()`", record)
        frame.open_sync = record

    def timing_read(self) -> None:
        """A clock or a timer is read: a synchronise just before it serves the measurement."""
        record = self.frame.open_sync
        if record is not None:
            record[0] = True

    def maybe_synced(self, name: str) -> None:
        """A call of this module's own function ``name``: it may synchronise, so stay quiet,
        unless it was walked already (or in the pass before) and synchronised nothing."""
        if name == self.function_name():
            return  # a recursive call: what it does is being walked
        known = name in self.walked or name in self.prior_quiet
        if known and name not in self.sync_fns:
            return
        if not known:
            self.forward_calls.add(name)
        self.synced()
        self.frame.fresh_sync = False

    # -- clocks (XB107) -------------------------------------------------------------------------

    def clock_read(self, node: ast.AST) -> None:
        """A clock read with device work queued since the last synchronise: it ends an
        interval around that work, unless it starts one. Read into a name (``t1 = clock()``)
        it is decided where the name is used: ``t1 - t0`` ends an interval, ``t - t1``
        starts one. Outside loops, an interval around fills and copies alone (a setup's
        few kernels among seconds of host work) is not reported."""
        frame = self.frame
        self.clock_seen = True
        self.timing_read()
        if not (frame.clock and frame.work):
            return
        frame.work = False
        if not frame.loops and not frame.heavy:
            return
        if self.clock_target is not None:
            frame.pending_clocks[self.clock_target] = node
            return
        self.interval_end(node, self.interval_from)

    def interval_end(self, node: ast.AST, start_key: str | None) -> None:
        frame = self.frame
        if self.data_timer or start_key and _DATA_TIMER.search(start_key.lower()):
            return  # data_time.update(time.time() - start_data_loading): the host's wait for
            # the loader; the copies and fills queued meanwhile are not what it measures
        start = self.lookup(start_key) if start_key else None
        opened = start.tag if start is not None and isinstance(start.tag, tuple) else None
        if opened is not None and len(opened) < len(frame.loops):
            # the interval spans iterations of the loops opened since its start: decided when
            # the outermost of them ends (rebound in it: per iteration; else a sync bounds it)
            frame.loops[len(opened)].clocks.append((node, start_key))
            return
        self.report_clock(node)

    def interval(self, node: ast.BinOp) -> None:
        """``end - start`` of two names: a clock read into ``end`` ended an interval."""
        pending = self.frame.pending_clocks
        if isinstance(node.right, ast.Name):
            pending.pop(node.right.id, None)  # the start of an interval, not its end
        if isinstance(node.left, ast.Name) and node.left.id in pending:
            self.interval_end(pending.pop(node.left.id), dotted(node.right))

    def report_clock(self, node: ast.AST) -> None:
        device = next((d for d in reversed(self.branch_devices) if d), None)
        advice = ("call torch.cuda.synchronize() (or torch.accelerator.synchronize())"
                  if device in (None, "cuda") else
                  f"call {ADVICE[device]} (or torch.accelerator.synchronize())"
                  if device in ADVICE else "call torch.accelerator.synchronize() (the "
                  "synchronise of the device this path runs on)")
        self.report(node, "XB107", f"`{ast.unparse(node)}` ends an interval around device "
                    f"work that nothing synchronised: it times the launch, not the work; "
                    f"{advice} before reading the clock, or time with device events")
