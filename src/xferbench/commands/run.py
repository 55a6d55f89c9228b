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
from typing import Any

from ..asvrepo import (
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
from ..devices import resolve_device
from ..errors import XferbenchError
from ..headline import copy_rows, format_copy_rows, format_headlines, headlines
from ..labels import backup_path, label_results, protect, settle, write_metadata
from ..metadata import collect
from ..results import load

# In this order: a run cut short by a time limit keeps the files it finished, so the
# smallest of the headline files goes before the largest.
BENCH_FILES = ("bench_copies", "bench_sync", "bench_creation")


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
    files = [f for f in BENCH_FILES if os.path.exists(os.path.join(repo, "benchmarks", f + ".py"))]

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
        })
        if args.quick:
            env["XFERBENCH_QUICK"] = "1"
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)  # read by torch when it initialises
        run_info = {"commit": commit, "machine": machine, "device": dev.name, "sweep": sweep,
                    "quick": bool(args.quick), "bench": args.bench,
                    "torch_threads": threads or meta.get("torch_threads"),
                    "short_budgets": env.get("XFERBENCH_QUICK", "0") not in ("", "0"),
                    "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "complete": False, "files": []}
        print(f"xferbench run: torch {torch_version} (CUDA {cuda}) on {dev.name}, machine "
              f"{machine}, suite {commit[:8]}, {sweep} grid{' (quick)' if args.quick else ''}",
              flush=True)
        failed = False
        started = time.monotonic()
        # A kill (SIGTERM) stops the run the way Ctrl-C does: asv is stopped, results kept.
        previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
        # One asv call per benchmark file: asv saves only when a call ends, so an interrupt
        # loses the file in progress, never the files before it. A --bench regex is one call.
        groups = [(args.bench, "--bench " + args.bench)] if args.bench else [
            (f"^{name}\\.", name) for name in files]
        try:
            for i, (bench, title) in enumerate(groups, 1):
                print(f"[{i}/{len(groups)}] {title} ({time.monotonic() - started:.0f} s so far)",
                      flush=True)
                backup = backup_path(out_path)
                cmd = [sys.executable, "-m", "asv", "run", "--config", conf,
                       "-E", f"existing:{wrapper}", "--set-commit-hash", commit,
                       "--machine", machine, "--record-samples", "--show-stderr",
                       "--bench", bench]
                if args.quick:
                    cmd.append("--quick")
                try:
                    protect(out_path, backup)
                    code = _run_asv(cmd, repo, env)
                finally:
                    settle(out_path, backup)
                    label_results(out_path, torch_version, cuda, meta.get("python", ""), dev.name)
                failed = failed or code != 0
                run_info["files"].append({"bench": bench, "asv_exit": code})
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
    if failed:
        print("xferbench run: a benchmark failed (see asv's output above)", file=sys.stderr)
        return 1
    return 0
