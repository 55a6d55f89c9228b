"""``xferbench run``: the asv suite against the installed PyTorch, one results series per
(machine, torch version), with a table of the headline ratios at the end.

asv's existing environments name results after the interpreter's path and record no
package versions, so two PyTorch versions run at one commit would overwrite or average each
other. Each run therefore goes through a tiny interpreter wrapper whose path names the torch
version and CUDA version read from this interpreter, and the results file is then labelled
with them (params "torch", "cuda", "python").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from ...asvrepo import (
    check_wrapper,
    default_machine_name,
    find_repo,
    git_head,
    interpreter_wrapper,
    results_file,
    results_lock,
    slug,
    torch_label,
    write_asv_config,
    write_machine_file,
)
from ...devices import resolve_device
from ...errors import XferbenchError
from ...headline import copy_rows, format_copy_rows, format_headlines, hazard_table, headlines
from ...labels import backup_path, label_results, protect, settle, write_metadata
from ...metadata import collect
from ...results import load
from .progress import Progress, progress_path
from .suite import SuiteClass, describe_suite, skipped_at_discovery


def register_cli(sub: Any) -> None:
    p = sub.add_parser("run", help="run the asv suite on this machine's PyTorch",
                       allow_abbrev=False)
    p.add_argument("--quick", action="store_true",
                   help="short budgets and one asv pass: a smoke run, not numbers to publish")
    p.add_argument("--device", default="auto", help="auto (default), cpu, cuda, cuda:N, xpu, mps")
    p.add_argument("--bench", default=None, metavar="REGEX",
                   help="only benchmarks whose name matches REGEX (as asv --bench)")
    p.add_argument("--machine", default=None, help="machine name (default: host and GPU name)")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch intra-op threads in the benchmark processes (default: 1 on a "
                        "CPU device, as torch.utils.benchmark; torch's own default on an "
                        "accelerator)")
    p.add_argument("--sweep", choices=("default", "full"), default=None,
                   help="size grid (default: $XFERBENCH_SWEEP or 'default')")
    p.set_defaults(func=cmd_run)


def _run_asv(cmd: list[str], cwd: str, env: dict[str, str]) -> int:
    """Run asv; on an interrupt, ask it to stop (SIGINT), then make sure it has."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env)
    try:
        return proc.wait()
    except BaseException:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise


def _terminate_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@dataclass(frozen=True)
class Group:
    """One asv call. asv saves a results file only when a call ends, so each class that
    measures something is a call of its own: an interrupt or a time limit loses the class in
    progress, never the classes before it."""

    title: str
    regexes: tuple[str, ...]
    classes: tuple[SuiteClass, ...]


def _groups(classes: list[SuiteClass], bench: str | None) -> list[Group]:
    if bench is not None:  # the user's selection: one call, as asv run --bench
        chosen = tuple(c for c in classes if any(re.search(bench, b) for b in c.benchmarks()))
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


def _outcomes(done: list[SuiteClass], progress: Progress) -> dict[str, list[dict[str, Any]]]:
    """Every combination of the finished classes that has no number, with its reason: skipped
    at discovery (per method), or skipped or failed while measuring (per class)."""
    out = skipped_at_discovery(done)
    for c in done:
        for row in progress.outcomes.get(c.full_name, []):
            for name in c.benchmarks():
                out.setdefault(name, []).append(row)
    return out


def cmd_run(args: argparse.Namespace) -> int:
    if args.bench is not None:
        try:
            re.compile(args.bench)
        except re.error as exc:
            raise XferbenchError(
                f"--bench {args.bench!r} is not a regular expression: {exc}") from None
    dev = resolve_device(args.device)
    repo = find_repo()
    commit = git_head(repo)
    results_dir = os.path.abspath(args.results)
    if os.path.exists(results_dir) and not os.path.isdir(results_dir):
        raise XferbenchError(f"--results {args.results} is a file, not a folder")
    meta = collect(dev)
    machine = slug(args.machine) if args.machine else default_machine_name(meta)
    torch_version, cuda = torch_label(meta)
    sweep = args.sweep or os.environ.get("XFERBENCH_SWEEP", "default")
    if sweep not in ("default", "full"):
        raise XferbenchError(f"XFERBENCH_SWEEP={sweep!r} is not a sweep: use default or full")
    if args.threads is not None and args.threads < 1:
        raise XferbenchError(f"--threads {args.threads} is not a thread count: give 1 or more")
    # On a CPU the benchmarks share the cores with asv itself; one thread, as
    # torch.utils.benchmark does, keeps CPU figures from swinging with the machine's load.
    threads = args.threads or (None if dev.is_accelerator else 1)

    with results_lock(results_dir), tempfile.TemporaryDirectory(prefix="xferbench-") as work:
        wrapper = interpreter_wrapper(torch_version, cuda)
        conf = write_asv_config(repo, results_dir, work)
        write_machine_file(work, machine, meta)
        out_path = results_file(results_dir, machine, commit, wrapper)
        env = dict(os.environ)
        env.update({
            "HOME": work,  # asv's machine file lives in $HOME; keep the user's untouched
            "XFERBENCH_DEVICE": dev.name,
            "XFERBENCH_PROBE": json.dumps({"device": dev.name,
                                           "capabilities": meta["capabilities"]}),
            "XFERBENCH_SWEEP": sweep,
            "XFERBENCH_PROGRESS": progress_path(work),
        })
        if args.quick:
            env["XFERBENCH_QUICK"] = "1"
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)  # read by torch when it initialises
            meta["torch_threads"] = threads  # the benchmark processes', not this one's
        classes = describe_suite(repo, env)
        groups = _groups(classes, args.bench)
        total = sum(c.measured for g in groups for c in g.classes)
        run_info: dict[str, Any] = {
            "commit": commit, "machine": machine, "device": dev.name, "sweep": sweep,
            "quick": bool(args.quick), "bench": args.bench,
            "short_budgets": env.get("XFERBENCH_QUICK", "0") not in ("", "0"),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "complete": False, "files": [], "outcomes": {}}
        print(f"xferbench run: torch {torch_version} (CUDA {cuda}) on {dev.name}, machine "
              f"{machine}, suite {commit[:8]}, {sweep} grid{' (quick)' if args.quick else ''}: "
              f"{total} combinations to measure in {len(groups)} asv calls", flush=True)
        failed = False
        started = time.monotonic()
        progress = Progress(env["XFERBENCH_PROGRESS"], total, sys.stdout).start(
            {c.full_name: list(c.param_names) for c in classes})
        # A kill (SIGTERM) stops the run the way Ctrl-C does: asv is stopped, results kept.
        previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
        try:
            for i, group in enumerate(groups, 1):
                print(f"[{i}/{len(groups)}] {group.title} "
                      f"({time.monotonic() - started:.0f} s so far)", flush=True)
                backup = backup_path(out_path)
                cmd = [sys.executable, "-m", "asv", "run", "--config", conf,
                       "-E", f"existing:{wrapper}", "--set-commit-hash", commit,
                       "--machine", machine, "--record-samples", "--show-stderr"]
                for regex in group.regexes:
                    cmd += ["--bench", regex]
                if args.quick:
                    cmd.append("--quick")
                check_wrapper(wrapper)  # the results must carry this interpreter's torch
                try:
                    protect(out_path, backup)
                    code = _run_asv(cmd, repo, env)
                finally:
                    settle(out_path, backup)
                    label_results(out_path, torch_version, cuda, meta.get("python", ""), dev.name)
                failed = failed or code != 0
                run_info["files"].append({"bench": " | ".join(group.regexes), "asv_exit": code})
                run_info["outcomes"] = _outcomes(
                    [c for g in groups[:i] for c in g.classes], progress)
                if os.path.exists(out_path):
                    write_metadata(out_path, meta, run_info)
            run_info["complete"] = True
        except KeyboardInterrupt:
            print("\nxferbench run: interrupted; results saved so far are kept", file=sys.stderr)
            if os.path.exists(out_path):
                write_metadata(out_path, meta, run_info)
            return 130
        finally:
            signal.signal(signal.SIGTERM, previous)
            progress.stop()
        if os.path.exists(out_path):
            run_info["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            write_metadata(out_path, meta, run_info)
    if not os.path.exists(out_path):
        print("xferbench run: asv saved no results (see its output above)", file=sys.stderr)
        return 1
    print(f"\nresults: {os.path.relpath(out_path)} ({time.monotonic() - started:.0f} s)")
    rs = load(results_dir).filter(machine=machine, torch=torch_version, commit=commit)
    print()
    for line in format_copy_rows(copy_rows(rs)):
        print(line)
    print()
    for line in format_headlines(headlines(rs)):
        print(line)
    print()
    for line in hazard_table(rs):
        print(line)
    if failed:
        print("xferbench run: a benchmark failed (see asv's output above)", file=sys.stderr)
        return 1
    return 0
