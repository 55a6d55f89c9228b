"""``xferbench run``: the asv suite against the installed PyTorch, one results series per
(machine, torch version, options), with a table of the headline ratios at the end.

asv's existing environments name results after the interpreter's path and record no
package versions, so two PyTorch versions run at one commit would overwrite or average each
other. Each run therefore goes through a tiny interpreter wrapper, private to this
interpreter, whose path names the torch and CUDA versions read from it (and "-quick" or
"-threadsN" for runs whose numbers are not comparable), and the results file is labelled
with them (params "torch", "cuda", "python", "device", "quick"). Every class's process reports
the interpreter and torch it ran; a run whose processes ran another is refused, not labelled.

The command is a plan, a transaction per asv call and a report, as ``compare`` is a
comparison and its rendering: ``plan.py`` checks and resolves everything before anything is
written (``RunPlan``, frozen), ``transaction.py`` carries it out one asv call at a time (each
call owns the results file's backup protocol), and ``report.py`` says what the run found
(``RunReport``: text or JSON, and the exit status).

Exit status (``ExitCode``): 0 done; 2 bad input or an environment error (one sentence, nothing
written); 3 the run measured nothing or a combination failed (its results so far are kept);
130 interrupted (results saved before the interrupt are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from dataclasses import replace
from typing import Any

from ...errors import ExitCode, XferbenchError
from ...practices import SWEEPS
from ...results.backup import clean_stale
from ...results.lock import lock_is_held, results_lock
from ...results.safefiles import left_by_dead_process, remove_tree
from ..options import add_bench, add_device, add_format, add_results
from .devices import resolve_devices
from .numa import NUMA_MODES, placed
from .plan import Options, RunPlan, check_options, make_plan
from .report import RunReport, report
from .transaction import carry_out, committed_list_kept, results_folder, setup

WORK_PREFIX = "xferbench-run-"


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "run", allow_abbrev=False, help="run the asv suite on this machine's PyTorch",
        description="Run the asv suite against the PyTorch of this interpreter and file the "
                    "results under RESULTS/<machine>/, one series per PyTorch version and "
                    "options; ends with the copy table at 64 MiB and the headline ratios. "
                    "Exit status: 0 done, 2 bad input or environment error, 3 nothing "
                    "measured or a combination failed, 130 interrupted (results saved so far "
                    "are kept).")
    p.add_argument("--quick", action="store_true",
                   help="short budgets: a smoke run, filed as a series of its own and not "
                        "for citing")
    add_device(p)
    p.add_argument("--devices", default=None, metavar="all|0,2,...",
                   help="measure the suite on each of these devices in turn, one series per "
                        "device (default: the best device alone); peer copies need two")
    p.add_argument("--numa", choices=NUMA_MODES, default="off",
                   help="auto: run the benchmark processes on the CPUs of the device's NUMA "
                        "node (the run says where, or why it could not)")
    add_bench(p, help="only benchmarks whose name matches REGEX (as asv --bench)")
    p.add_argument("--machine", default=None,
                   help="machine name: letters, digits, '.', '_', '-' (default: host and GPU)")
    add_results(p)
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch intra-op threads in the benchmark processes (default: 1 on a "
                        "CPU device, as torch.utils.benchmark; torch's own default on an "
                        "accelerator); a run with --threads is a series of its own")
    p.add_argument("--sweep", choices=SWEEPS, default=None,
                   help="size grid (default: $XFERBENCH_SWEEP or 'default'; smoke: one small "
                        "size that stands in for the headline size, every branch, no headline)")
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help="end the run within S seconds: the headline classes first, each its "
                        "headline combinations first, every combination at its default spec "
                        "or cut, saying why (never a class killed: every class saves what it "
                        "finished); too short for the headline classes: refused")
    p.add_argument("--cap", action="store_true",
                   help="with --budget: cap each combination's sampling to its share of what "
                        "is left, to measure more of the grid on fewer samples (a series of "
                        "its own, -capped, not for citation)")
    add_format(p, help="text (default) or a JSON summary on stdout (progress on stderr)")
    p.set_defaults(func=cmd_run, needs_torch=True)


def _clean_work_dirs() -> None:
    """Work folders of runs that were killed (their process is gone)."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        m = re.fullmatch(rf"{WORK_PREFIX}(\d+)-\w+", name)
        path = os.path.join(base, name)
        if m and os.path.isdir(path) and left_by_dead_process(path, int(m.group(1))):
            remove_tree(path)


def refuse_if_locked(opts: Options) -> None:
    """A second run on a results folder is refused at once, before torch is imported."""
    if lock_is_held(opts.results_dir):
        raise XferbenchError(
            f"another xferbench run is writing to {opts.results_dir}: wait for it to finish "
            "or give another --results folder")


def execute(plan: RunPlan) -> RunReport:
    """Carry ``plan`` out under the results folder's lock, in a private work folder."""
    out = sys.stderr if plan.options.format == "json" else sys.stdout
    made = not os.path.isdir(plan.options.results_dir)
    results_folder(plan)
    _clean_work_dirs()
    try:
        with results_lock(plan.options.results_dir) as lock_fd:
            for line in clean_stale(plan.options.results_dir):
                print(f"xferbench run: {line} (left by a run that was killed)", file=out)
            work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-")
            try:
                with committed_list_kept(plan):
                    done = carry_out(plan, setup(plan, work, lock_fd, out))
                return report(plan, done)
            finally:
                remove_tree(work)
    finally:
        if made:  # a run that saved nothing leaves no empty results folder behind
            with contextlib.suppress(OSError):
                os.rmdir(plan.options.results_dir)


def render(r: RunReport) -> None:
    if r.results is not None and not r.interrupted:
        if r.plan.options.format == "json":
            print(json.dumps(r.to_dict(), indent=2))
        else:
            print("\n".join(r.text()))
    for line in r.problems():
        print(line, file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> ExitCode:
    opts = check_options(args)
    refuse_if_locked(opts)
    if opts.devices is not None:
        return run_each_device(opts)
    r = execute_placed(make_plan(opts))
    render(r)
    return r.exit_code


def execute_placed(plan: RunPlan) -> RunReport:
    """``execute`` on the CPUs ``--numa`` places the run on (numa.py)."""
    out = sys.stderr if plan.options.format == "json" else sys.stdout
    with placed(plan, plan.options.numa, out) as where:
        return execute(where)


def run_each_device(opts: Options) -> ExitCode:
    """``--devices``: one run per device, each a series of its own; the worst exit status.
    In JSON, one document: {"devices": [each run's summary]}."""
    devices = resolve_devices(opts.devices or ("all",), opts.device)
    codes, summaries = [], []
    for i, dev in enumerate(devices):
        one = replace(opts, device=dev.name, devices=tuple(str(d.index) for d in devices))
        print(f"xferbench run: device {i + 1} of {len(devices)}: {dev}",
              file=sys.stderr if opts.format == "json" else sys.stdout, flush=True)
        r = execute_placed(make_plan(one))
        if opts.format == "json":
            summaries.append(r.to_dict() if r.results is not None else {"device": dev.name})
            for line in r.problems():
                print(line, file=sys.stderr)
        else:
            render(r)
        codes.append(r.exit_code)
        if r.interrupted:
            break
    if opts.format == "json":
        print(json.dumps({"devices": summaries}, indent=2))
    return max(codes, default=ExitCode.OK)
