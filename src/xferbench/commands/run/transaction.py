"""Carrying a plan out: the run's asv calls in turn, each one a transaction on the results file
(``asv_call``: protected, run, then discarded or kept, labelled and recorded in the sidecar),
and what the run did, for the report."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TextIO

from ...analysis.provenance import link_caution
from ...errors import XferbenchError
from ...metadata import MachineMetadata
from ...results.asvconfig import check_wrapper, interpreter_wrapper
from ...results.asvfiles import (
    benchmark_list,
    keep_param_values,
    label_results,
    results_file,
    set_aside,
)
from ...results.backup import protected
from ...results.machines import write_machine_file
from ...results.repo import SUITE_COMMIT_VAR, committed_unchanged, write_asv_config
from ...results.runrecords import AsvCall, Outcome, RunRecord, iso_now
from ...results.sidecar import Findings, record_run
from ...results.suite import CLONE, PACKAGE
from .asvcall import run_asv, sigterm_as_interrupt
from .budget import allot, cut_reason, plan_text, read_time_s, seconds_text
from .plan import Group, RunPlan
from .progress import Progress, progress_path
from .suite import SuiteClass, skipped_at_discovery


@dataclass(frozen=True)
class Setup:
    """What the calls share, made in the run's private work folder under the lock."""

    lock_fd: int
    conf: str  # the asv configuration written for this run
    wrapper: str  # the interpreter wrapper whose path names torch and CUDA
    results_file: str  # the file every call of this run writes into
    env: dict[str, str]
    out: TextIO  # where the run's progress goes
    log: str = ""  # where asv's own output goes (its tables, its warnings), kept after the run


@dataclass
class Ledger:
    """What the run has done so far: its record, the benchmarks saved, asv's exit statuses
    and the classes whose calls are over."""

    record: RunRecord
    saved: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    done: list[SuiteClass] = field(default_factory=list)
    #: the combinations of classes the budget left out, each with its reason
    cut: dict[str, list[Outcome]] = field(default_factory=dict)
    cut_classes: list[str] = field(default_factory=list)

    def record_run(self, s: Setup, meta: MachineMetadata, progress: Progress) -> None:
        """The run so far, into the results file's sidecar."""
        done = {name for c in self.done for name in c.benchmarks()}
        record_run(s.results_file, meta, self.record, self.saved,
                   outcomes(self.done, progress), self.cut,
                   Findings({k: v for k, v in progress.observations.items() if k in done},
                            capped(self.done, progress),
                            {k: v for k, v in progress.diagnostics.items() if k in done}))


def outcomes(done: list[SuiteClass], progress: Progress) -> dict[str, list[Outcome]]:
    """Every combination of the finished classes that has no number, with its reason: skipped
    at discovery (per method), skipped or failed while measuring (per class), or one method
    of a measured combination without a value (per method)."""
    out = skipped_at_discovery(done)
    for c in done:
        for row in progress.outcomes.get(c.full_name, []):
            for name in c.benchmarks():
                out.setdefault(name, []).append(row)
        for name in c.benchmarks():
            out.setdefault(name, []).extend(progress.method_outcomes.get(name, []))
    return {name: rows for name, rows in out.items() if rows}


def capped(done: list[SuiteClass], progress: Progress) -> dict[str, list[Outcome]]:
    """Every combination of the finished classes sampled under a budget cap, per benchmark."""
    return {name: list(progress.capped[c.full_name]) for c in done
            if progress.capped.get(c.full_name) for name in c.benchmarks()}


def setup(plan: RunPlan, work: str, lock_fd: int, out: TextIO) -> Setup:
    wrapper = interpreter_wrapper(plan.torch_version, plan.cuda, plan.series_suffix)
    conf = write_asv_config(plan.suite, plan.options.results_dir, work, plan.suite_commit)
    write_machine_file(work, plan.machine, plan.meta)
    target = results_file(plan.options.results_dir, plan.machine, plan.commit, wrapper)
    log = os.path.join(tempfile.gettempdir(),
                       f"xferbench-asv-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")
    return Setup(lock_fd, conf, wrapper, target, plan.env(work, progress_path(work)), out, log)


def asv_call(plan: RunPlan, s: Setup, group: Group, progress: Progress, ledger: Ledger,
             deadline: float | None = None) -> None:
    """One asv call as a transaction on the results file: whatever happens to the call (an
    interrupt, a kill, a class measured by another interpreter), the file is what asv saved
    whole, or what it was before; what was saved is labelled and recorded in the sidecar."""
    check_wrapper(s.wrapper)  # the results must carry this interpreter's torch
    env = s.env if deadline is None else {**s.env, "XFERBENCH_DEADLINE": f"{deadline:.3f}"}
    listed = benchmark_list(plan.options.results_dir)  # asv rewrites it: keep what it drops
    with protected(s.results_file) as call:
        with open(s.log, "a", encoding="utf-8") as log:
            code = run_asv(plan.asv_command(s.conf, s.wrapper, group), cwd=plan.repo,
                           env=env, lock_fd=s.lock_fd, results_file=s.results_file,
                           stdout=log)
        if progress.mismatch:  # numbers from another interpreter are never labelled
            call.discard()
    if progress.mismatch:
        raise XferbenchError(progress.mismatch + "; this class's results were discarded")
    keep_param_values(plan.options.results_dir, listed)
    label_results(s.results_file, plan.torch_version, plan.cuda, plan.meta.python or "",
                  plan.device.name, plan.series_params)
    ledger.codes.append(code)
    ledger.done += group.classes
    ledger.record = ledger.record.with_call(AsvCall(" | ".join(group.regexes), code))
    if call.changed():
        ledger.saved += group.benchmarks()
        ledger.record_run(s, plan.meta, progress)


def budgeted_call(plan: RunPlan, s: Setup, index: int, progress: Progress, ledger: Ledger,
                  spent_s: float) -> None:
    """The ``index``-th asv call under the run's ``--budget``: its deadline from its share of
    what is left, or, with too little left to start it, its combinations recorded as cut."""
    budget_s = plan.options.budget
    group = plan.groups[index]
    if budget_s is None:
        asv_call(plan, s, group, progress, ledger)
        return
    share = allot(budget_s, spent_s, [g.plan for g in plan.groups[index:]],
                  sum(read_time_s(c) for c in group.classes if c.measured))
    if share.seconds is None:
        reason = cut_reason(budget_s, share.left_s)
        print(f"  {group.measured_names}: {reason}", file=s.out, flush=True)
        for c in group.classes:
            ledger.cut.update(c.cut(reason))
            progress.total -= c.measured
        ledger.cut_classes.append(group.measured_names)
        return
    print(f"  {group.measured_names}: {seconds_text(share.seconds)} of the "
          f"{seconds_text(share.left_s)} left (planned: {seconds_text(group.plan.headline_s)} "
          f"its headline part, {seconds_text(group.plan.rest_s)} the rest of its grid)",
          file=s.out, flush=True)
    asv_call(plan, s, group, progress, ledger, share.deadline(time.time()))


@dataclass(frozen=True)
class Done:
    """What the run did, for the report."""

    results_file: str
    seconds: float
    codes: tuple[int, ...]
    progress: Progress
    interrupted: bool = False
    cut_classes: tuple[str, ...] = ()  # left out by --budget
    log: str = ""  # asv's own output


def announce(plan: RunPlan, out: TextIO) -> None:
    if plan.meta.emulated:
        print(f"xferbench run: {plan.device} is emulated on the host: every accelerator path "
              "runs, but no time below is a measurement", file=out, flush=True)
    quick = " (quick)" if plan.options.quick else ""
    packaged = f" ({plan.suite.describe()})" if plan.suite.source == PACKAGE else ""
    print(f"xferbench run: torch {plan.torch_version} (CUDA {plan.cuda}) on {plan.device.name}, "
          f"machine {plan.machine}, suite {plan.commit[:8]}{packaged}, {plan.options.sweep} "
          f"grid{quick}: {plan.total} combinations to measure in {len(plan.groups)} asv calls",
          file=out, flush=True)
    identity = plan.suite.identity
    if identity is not None and (identity.dirty or not identity.commit_known):
        why = ("was built from a tree with uncommitted changes to the suite"
               if identity.commit_known else "was built without its git commit (its files' "
               "digest stands in for one)")
        print(f"xferbench run: caution: this package {why}: results filed under "
              f"{plan.commit[:8]} may not be that commit's suite", file=out, flush=True)
    if plan.threads:
        why = "" if plan.options.threads else ": on a CPU, as torch.utils.benchmark (--threads N)"
        print(f"xferbench run: {plan.threads} torch thread(s) in the benchmark processes{why}",
              file=out, flush=True)
    if plan.commit_source in ("given", "tree"):
        how = (f"{SUITE_COMMIT_VAR}'s" if plan.commit_source == "given" else
               "the tree's own hash (relabel it: scripts/relabel RESULTS COMMIT)")
        print(f"xferbench run: no git checkout here: asv files the results under {how} suite "
              f"commit {plan.commit[:8]}", file=out, flush=True)
    caution = link_caution(plan.meta)
    if caution:
        print(f"xferbench run: caution: {caution}; every figure and citation of this run says "
              "so", file=out, flush=True)
    if plan.options.budget is not None:
        print("xferbench run: " + plan_text(plan.options.budget, [
            (g.measured_names, g.plan) for g in plan.groups if g.plan.total_s],
            plan.options.cap, time.monotonic() - plan.options.asked_at), file=out, flush=True)


def carry_out(plan: RunPlan, s: Setup) -> Done:
    """Every asv call of ``plan`` in turn; an interrupt (Ctrl-C, SIGTERM) stops the run and
    keeps what the calls before it saved."""
    opts = plan.options
    ledger = Ledger(RunRecord(plan.commit, plan.machine, plan.device.name, opts.sweep,
                              opts.quick, opts.bench, iso_now(), budget_s=opts.budget,
                              suite=plan.suite.record(), capped=opts.cap))
    announce(plan, s.out)
    print(f"xferbench run: asv's own output goes to {s.log}", file=s.out, flush=True)
    started = time.monotonic()
    progress = Progress(s.env["XFERBENCH_PROGRESS"], plan.total, s.out).start(
        {c.full_name: list(c.param_names) for c in plan.classes},
        expect={"executable": sys.executable, "torch": plan.torch_version})
    interrupted = False
    try:
        with sigterm_as_interrupt():
            for i, group in enumerate(plan.groups, 1):
                print(f"[{i}/{len(plan.groups)}] {group.title} "
                      f"({time.monotonic() - started:.0f} s so far)", file=s.out, flush=True)
                budgeted_call(plan, s, i - 1, progress, ledger,
                              time.monotonic() - (opts.asked_at or started))
        ledger.record = replace(ledger.record, complete=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.stop()
    if ledger.saved:
        if not interrupted:
            ledger.record = replace(ledger.record, finished_at=iso_now())
        ledger.record_run(s, plan.meta, progress)
    return Done(s.results_file, time.monotonic() - started, tuple(ledger.codes), progress,
                interrupted, tuple(ledger.cut_classes), s.log)


@contextlib.contextmanager
def committed_list_kept(plan: RunPlan) -> Iterator[None]:
    """Around a run into the clone's own results folder, whose benchmarks.json is tracked
    and as committed: once the run is over, however it ends, asv's rewrite of that file is
    set aside (``asvfiles.set_aside``), so the run modifies no tracked file of the clone."""
    root = plan.options.results_dir
    committed = None
    if plan.suite.source == CLONE:
        committed = committed_unchanged(plan.suite.root, os.path.join(root, "benchmarks.json"))
    try:
        yield
    finally:
        if committed is not None:
            set_aside(root, committed)


def results_folder(plan: RunPlan) -> None:
    """Make the results folder, or one sentence why it cannot be."""
    try:
        os.makedirs(plan.options.results_dir, exist_ok=True)
    except OSError as exc:
        raise XferbenchError(
            f"--results {plan.options.results_given} cannot be made: {exc.strerror}") from None
