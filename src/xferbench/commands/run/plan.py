"""What a run will do, decided once before anything is written: the options checked, the
device, suite commit, metadata, machine name and series resolved, and the suite split into
asv calls. ``RunPlan`` is frozen; the transaction (``transaction.py``) and the report
(``report.py``) only read it."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass, replace

from ...devices import Device, resolve_device
from ...errors import XferbenchError
from ...event_batches import QUEUE_DEPTH_VAR
from ...flags import env_flag, without_run_vars
from ...metadata import MachineMetadata, collect
from ...practices import parse_sweep
from ...results import check_folder
from ...results.machines import (
    check_machine_folder,
    check_machine_name,
    check_same_machine,
    default_machine_name,
    torch_label,
)
from ...results.repo import SuiteCommit, load_asv_config, suite_commit
from ...results.safefiles import check_output_folder
from ...results.suite import CLONE, Suite, find_suite
from ..options import bench_pattern
from .budget import ClassPlan, check_budget, check_headline, plan_of
from .devices import parse_devices
from .suite import SuiteClass, describe_suite


@dataclass(frozen=True)
class Options:
    """What a run was asked, checked before anything imports torch or writes."""

    results_dir: str  # absolute
    results_given: str  # as the user wrote it, for messages
    bench: str | None
    machine: str | None
    threads: int | None
    sweep: str
    quick: bool
    device: str = "auto"
    format: str = "text"
    budget: float | None = None  # --budget: seconds for the whole run (budget.py)
    asked_at: float = 0.0  # time.monotonic() when checked: the budget counts from here
    devices: tuple[str, ...] | None = None  # --devices: ("all",) or indices (devices.py)
    numa: str = "off"  # --numa: off, or auto (numa.py)
    cap: bool = False  # --cap: under --budget, sampling capped to fit (a series of its own)


def check_options(args: argparse.Namespace) -> Options:
    """The run's options from the command line, or one sentence for the first bad one."""
    bench_pattern(args.bench)
    if args.threads is not None and args.threads < 1:
        raise XferbenchError(f"--threads {args.threads} is not a thread count: give 1 or more")
    cores = os.cpu_count() or 1
    if args.threads is not None and args.threads > cores:
        raise XferbenchError(f"--threads {args.threads} is more than the {cores} cores here: "
                             f"give 1 to {cores}")
    sweep = args.sweep or parse_sweep(os.environ.get("XFERBENCH_SWEEP"))
    machine = check_machine_name(args.machine) if args.machine is not None else None
    quick = bool(args.quick) or env_flag("XFERBENCH_QUICK")  # one parser for every flag
    budget = check_budget(getattr(args, "budget", None))
    cap = bool(getattr(args, "cap", False))
    if cap and budget is None:
        raise XferbenchError("--cap caps sampling to fit a --budget: give --budget S with it")
    check_output_folder("--results", args.results)
    if machine is not None:
        check_machine_folder(os.path.abspath(args.results), machine)
    return Options(os.path.abspath(args.results), args.results, args.bench, machine,
                   args.threads, sweep, quick, args.device, args.format, budget,
                   time.monotonic(), parse_devices(getattr(args, "devices", None)),
                   getattr(args, "numa", None) or "off", cap)


@dataclass(frozen=True)
class Group:
    """One asv call. asv saves a results file only when a call ends, so each class that
    measures something is a call of its own: an interrupt or a time limit loses the class in
    progress, never the classes before it."""

    title: str
    regexes: tuple[str, ...]
    classes: tuple[SuiteClass, ...]

    def benchmarks(self) -> list[str]:
        return [b for c in self.classes for b in c.benchmarks()]

    @property
    def measured_names(self) -> str:
        """The classes that measure something, by name ("Copy"), for messages."""
        return ", ".join(c.name for c in self.classes if c.measured) or self.title

    @property
    def plan(self) -> ClassPlan:
        """What the call is planned to cost at the default spec (budget.py)."""
        return plan_of(self.classes)


def group_classes(classes: list[SuiteClass], bench: str | None) -> list[Group]:
    """The asv calls: the user's ``--bench`` selection as one, else one per class that
    measures something here."""
    if bench is not None:  # the user's selection: one call, as asv run --bench
        chosen = tuple(c for c in classes if any(re.search(bench, b) for b in c.benchmarks()))
        if not chosen:
            raise XferbenchError(f"--bench {bench!r} matches no benchmark of the suite (its "
                                 f"classes: {', '.join(c.name for c in classes)})")
        return [Group(f"--bench {bench}", (bench,), chosen)]
    groups = [Group(c.full_name, c.selection(), (c,)) for c in classes if c.measured]
    idle = tuple(c for c in classes if not c.measured)
    if idle:  # recorded as skipped, with their reasons, in the first call: they cost nothing
        first = groups[0] if groups else Group("", (), ())
        title = f"{first.title} (and, with nothing to measure here, " \
                f"{', '.join(c.name for c in idle)})".strip()
        groups[:1] = [Group(title, first.regexes + tuple(r for c in idle for r in c.selection()),
                            first.classes + idle)]
    return groups


def absolute_paths(value: str) -> str:
    """A PYTHONPATH with each folder made absolute against this working folder: asv starts
    the benchmark processes in folders of its own (setup_cache in a temporary one), where a
    relative entry (``PYTHONPATH=tests/emu/autoload``) would name nothing."""
    return os.pathsep.join(os.path.abspath(p or ".") for p in value.split(os.pathsep))


@dataclass(frozen=True)
class RunPlan:
    """Everything a run decided before it measures."""

    options: Options
    device: Device
    suite: Suite  # a clone's, or the package's (results/suite.py)
    commit: str
    meta: MachineMetadata  # torch_threads: the benchmark processes'
    machine: str
    torch_version: str
    cuda: str
    threads: int | None  # OMP_NUM_THREADS of the benchmark processes; None: torch's default
    groups: tuple[Group, ...]
    classes: tuple[SuiteClass, ...]
    #: where ``commit`` came from: git, or (a tree without git) given or the tree's own hash
    commit_source: str = "git"  # SuiteCommit.source: where the commit came from
    commit_date_ms: int | None = None  # the commit's date where git cannot say it

    @property
    def suite_commit(self) -> SuiteCommit:
        """The commit the run files its results under, and where it came from."""
        return SuiteCommit(self.commit, self.commit_source, self.commit_date_ms)

    @property
    def repo(self) -> str:
        """The suite's folder: asv.conf.json and benchmarks/."""
        return self.suite.root

    @property
    def ran(self) -> frozenset[str] | None:
        """The benchmarks ``--bench`` chose, None for the whole suite."""
        if self.options.bench is None:
            return None
        return frozenset(b for c in self.classes for b in c.benchmarks()
                         if re.search(self.options.bench, b))

    @property
    def total(self) -> int:
        """The combinations to measure, in every call."""
        return sum(c.measured for g in self.groups for c in g.classes)

    @property
    def series_suffix(self) -> str:
        """The interpreter wrapper's name suffix that files this run's figures apart."""
        return ("-quick" if self.options.quick else "") + (
            f"-threads{self.options.threads}" if self.options.threads is not None else "") + (
            f"-sweep{self.options.sweep}" if self.options.sweep != "default" else "") + (
            f"-dev{self.device.index}" if self.device.index else "") + (  # one per device
            "-capped" if self.options.cap else "")  # sampled under a budget cap

    @property
    def series_params(self) -> dict[str, str]:
        """The params that keep this run's figures apart in the results file."""
        params = {"quick": "yes" if self.options.quick else "no"}
        if self.options.threads is not None:
            params["threads"] = str(self.options.threads)
        if self.options.sweep != "default":  # a smoke run never replaces a default run's file
            params["sweep"] = self.options.sweep
        if self.options.cap:  # --budget --cap: never filed as default figures
            params["capped"] = "yes"
        return params

    def env(self, work: str | None = None, progress: str | None = None) -> dict[str, str]:
        """The environment of the suite's processes; ``work`` is asv's $HOME (its machine
        file) and ``progress`` the progress file, where the run has them. Every variable of
        ``flags.RUN_VARS`` is the run's own: set here, or cleared (a deadline is set per asv
        call), never the shell's."""
        env = without_run_vars(os.environ)
        env.update({
            "XFERBENCH_DEVICE": self.device.name,
            "XFERBENCH_PROBE": json.dumps({"device": self.device.name,
                                           "capabilities": self.meta.to_dict()["capabilities"]}),
            "XFERBENCH_SWEEP": self.options.sweep,
            "XFERBENCH_QUICK": "1" if self.options.quick else "0",
            "XFERBENCH_CAP": "1" if self.options.cap else "0",
        })
        if self.meta.launch_queue_depth:  # measured once: each class process takes it from here
            env[QUEUE_DEPTH_VAR] = str(self.meta.launch_queue_depth)
        else:
            env.pop(QUEUE_DEPTH_VAR, None)
        if self.options.devices:  # --devices: the devices every series of the run measures
            env["XFERBENCH_DEVICES"] = ",".join(self.options.devices)
        if work is not None:
            env["HOME"] = work  # asv's machine file lives in $HOME; keep the user's untouched
        if progress is not None:
            env["XFERBENCH_PROGRESS"] = progress
        if self.threads:
            env["OMP_NUM_THREADS"] = str(self.threads)  # read by torch when it initialises
        for var in ("PYTHONPATH", "ASV_PYTHONPATH"):
            if env.get(var):
                env[var] = absolute_paths(env[var])
        return env

    def asv_command(self, conf: str, wrapper: str, group: Group) -> list[str]:
        cmd = [sys.executable, "-m", "asv", "run", "--config", conf,
               "-E", f"existing:{wrapper}", "--set-commit-hash", self.commit,
               "--machine", self.machine, "--record-samples", "--show-stderr"]
        for regex in group.regexes:
            cmd += ["--bench", regex]
        if self.options.quick:
            cmd.append("--quick")
        return cmd


def make_plan(opts: Options) -> RunPlan:
    """Resolve the device, the suite and this machine for ``opts``; writes nothing."""
    suite = find_suite()  # before torch: a run without a suite says so at once
    load_asv_config(suite.root)  # a damaged asv.conf.json is said now, before the lock is taken
    found: SuiteCommit = suite_commit(suite)
    dev = resolve_device(opts.device)
    meta = collect(dev, under_load=True)  # the link and clock as the suite will meet them
    if meta.emulated and suite.source == CLONE and os.path.realpath(
            opts.results_dir) == os.path.realpath(os.path.join(suite.root, "results")):
        raise XferbenchError(
            f"device {dev} is emulated: its times are not measurements, so they do not go "
            f"into {opts.results_given}/; give --results DIR")
    torch_version, cuda = torch_label(meta)
    # On a CPU the benchmarks share the cores with asv itself; one thread, as
    # torch.utils.benchmark does, keeps CPU figures from swinging with the machine's load.
    threads = opts.threads or (None if dev.is_accelerator else 1)
    if threads:
        meta = replace(meta, torch_threads=threads)  # the benchmark processes', not this one's
    machine = opts.machine or default_machine_name(meta)
    check_machine_folder(opts.results_dir, machine)  # never into a folder of the user's
    check_same_machine(opts.results_dir, machine, meta)  # nor into another machine's
    # a damaged file of the folder the run files into is said now, not after measuring (one
    # of another machine's is that machine's problem: every command reads around it)
    check_folder(opts.results_dir, machine)
    plan = RunPlan(opts, dev, suite, found.commit, meta, machine, torch_version, cuda, threads,
                   (), (), found.source, found.date_ms)
    classes = describe_suite(suite.root, plan.env())
    if opts.budget is not None and opts.bench is None:
        check_headline(opts.budget, classes)  # before anything runs
    return replace(plan, classes=tuple(classes),
                   groups=tuple(group_classes(classes, opts.bench)))
