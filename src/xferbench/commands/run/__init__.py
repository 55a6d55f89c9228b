"""``xferbench run``: the asv suite against the installed PyTorch, one results series per
(machine, torch version, options), with a table of the headline ratios at the end.

asv's existing environments name results after the interpreter's path and record no
package versions, so two PyTorch versions run at one commit would overwrite or average each
other. Each run therefore goes through a tiny interpreter wrapper, private to this
interpreter, whose path names the torch and CUDA versions read from it (and "-quick" or
"-threadsN" for runs whose numbers are not comparable), and the results file is labelled
with them (params "torch", "cuda", "python", "device", "quick"). Every class's process reports
the interpreter and torch it ran; a run whose processes ran another is refused, not labelled.

Exit status: 0 done; 2 bad input or an environment error (one sentence, nothing written);
3 the run measured nothing or a combination failed (its results so far are kept);
130 interrupted (results saved before the interrupt are kept).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from ...asvrepo import (
    check_machine_name,
    check_wrapper,
    default_machine_name,
    find_repo,
    git_head,
    interpreter_wrapper,
    lock_is_held,
    results_file,
    results_lock,
    torch_label,
    write_asv_config,
    write_machine_file,
)
from ...devices import resolve_device
from ...errors import XferbenchError
from ...headline import copy_rows, format_copy_rows, format_headlines, hazard_table, headlines
from ...labels import (
    alive,
    backup_path,
    check_output_folder,
    clean_stale,
    discard,
    label_results,
    protect,
    record_run,
    settle,
)
from ...metadata import collect
from ...practices import SWEEPS
from ...results import load
from .asvcall import run_asv, terminate_as_interrupt
from .progress import Progress, progress_path
from .suite import SuiteClass, describe_suite, skipped_at_discovery

EXIT_FAILED = 3
EXIT_INTERRUPTED = 130
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
    p.add_argument("--device", default="auto",
                   help="auto (default), cpu, cuda, cuda:N, xpu, mps, or the name of a "
                        "registered PrivateUse1 backend (e.g. emu)")
    p.add_argument("--bench", default=None, metavar="REGEX",
                   help="only benchmarks whose name matches REGEX (as asv --bench)")
    p.add_argument("--machine", default=None,
                   help="machine name: letters, digits, '.', '_', '-' (default: host and GPU)")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch intra-op threads in the benchmark processes (default: 1 on a "
                        "CPU device, as torch.utils.benchmark; torch's own default on an "
                        "accelerator); a run with --threads is a series of its own")
    p.add_argument("--sweep", choices=SWEEPS, default=None,
                   help="size grid (default: $XFERBENCH_SWEEP or 'default'; smoke: one small "
                        "size that stands in for the headline size, every branch, no headline)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or a JSON summary on stdout (progress on stderr)")
    p.set_defaults(func=cmd_run)


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


@dataclass(frozen=True)
class Options:
    """What a run was asked, checked before anything imports torch or writes."""

    results_dir: str
    bench: str | None
    machine: str | None
    threads: int | None
    sweep: str
    quick: bool


def check_options(args: argparse.Namespace) -> Options:
    if args.bench is not None:
        try:
            re.compile(args.bench)
        except re.error as exc:
            raise XferbenchError(
                f"--bench {args.bench!r} is not a regular expression: {exc}") from None
    if args.threads is not None and args.threads < 1:
        raise XferbenchError(f"--threads {args.threads} is not a thread count: give 1 or more")
    sweep = args.sweep or os.environ.get("XFERBENCH_SWEEP", "").strip().lower() or "default"
    if sweep not in SWEEPS:
        raise XferbenchError(
            f"XFERBENCH_SWEEP={sweep!r} is not a sweep: use {', '.join(SWEEPS)}")
    machine = check_machine_name(args.machine) if args.machine is not None else None
    results_dir = os.path.abspath(args.results)
    check_output_folder("--results", args.results)
    return Options(results_dir, args.bench, machine, args.threads, sweep, bool(args.quick))


def _series(opts: Options) -> tuple[str, dict[str, str]]:
    """The wrapper's name suffix and the params that keep this run's figures apart."""
    suffix, params = "", {"quick": "yes" if opts.quick else "no"}
    if opts.quick:
        suffix += "-quick"
    if opts.threads is not None:
        suffix += f"-threads{opts.threads}"
        params["threads"] = str(opts.threads)
    return suffix, params


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _clean_work_dirs() -> None:
    """Work folders of runs that were killed (their process is gone)."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        m = re.fullmatch(rf"{WORK_PREFIX}(\d+)-\w+", name)
        if m and not alive(int(m.group(1))):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def cmd_run(args: argparse.Namespace) -> int:
    opts = check_options(args)
    if lock_is_held(opts.results_dir):  # refused at once, before torch is imported
        raise XferbenchError(
            f"another xferbench run is writing to {opts.results_dir}: wait for it to finish "
            "or give another --results folder")
    out = sys.stderr if args.format == "json" else sys.stdout
    dev = resolve_device(args.device)
    repo = find_repo()
    commit = git_head(repo)
    meta = collect(dev)
    if meta.get("emulated") and os.path.realpath(opts.results_dir) == os.path.realpath(
            os.path.join(repo, "results")):
        raise XferbenchError(
            f"device {dev} is emulated: its times are not measurements, so they do not go "
            f"into {args.results}/; give --results DIR")
    machine = opts.machine or default_machine_name(meta)
    torch_version, cuda = torch_label(meta)
    suffix, series_params = _series(opts)
    # On a CPU the benchmarks share the cores with asv itself; one thread, as
    # torch.utils.benchmark does, keeps CPU figures from swinging with the machine's load.
    threads = opts.threads or (None if dev.is_accelerator else 1)
    try:
        os.makedirs(opts.results_dir, exist_ok=True)
    except OSError as exc:
        raise XferbenchError(f"--results {args.results} cannot be made: {exc.strerror}") from None
    _clean_work_dirs()
    with results_lock(opts.results_dir) as lock_fd:
        for line in clean_stale(opts.results_dir):
            print(f"xferbench run: {line} (left by a run that was killed)", file=out)
        work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-")
        try:
            return _run(args, opts, out, lock_fd, work, dev=dev, repo=repo, commit=commit,
                        meta=meta, machine=machine, torch_version=torch_version, cuda=cuda,
                        suffix=suffix, series_params=series_params, threads=threads)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, opts: Options, out: Any, lock_fd: int, work: str, *,
         dev: Any, repo: str, commit: str, meta: dict[str, Any], machine: str,
         torch_version: str, cuda: str, suffix: str, series_params: dict[str, str],
         threads: int | None) -> int:
    wrapper = interpreter_wrapper(torch_version, cuda, suffix)
    conf = write_asv_config(repo, opts.results_dir, work)
    write_machine_file(work, machine, meta)
    out_path = results_file(opts.results_dir, machine, commit, wrapper)
    env = dict(os.environ)
    env.update({
        "HOME": work,  # asv's machine file lives in $HOME; keep the user's untouched
        "XFERBENCH_DEVICE": dev.name,
        "XFERBENCH_PROBE": json.dumps({"device": dev.name, "capabilities": meta["capabilities"]}),
        "XFERBENCH_SWEEP": opts.sweep,
        "XFERBENCH_PROGRESS": progress_path(work),
        "XFERBENCH_QUICK": "1" if opts.quick else "0",
    })
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)  # read by torch when it initialises
        meta["torch_threads"] = threads  # the benchmark processes', not this one's
    classes = describe_suite(repo, env)
    groups = _groups(classes, opts.bench)
    total = sum(c.measured for g in groups for c in g.classes)
    run_info: dict[str, Any] = {
        "commit": commit, "machine": machine, "device": dev.name, "sweep": opts.sweep,
        "quick": opts.quick, "bench": opts.bench,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "complete": False, "files": [], "outcomes": {}}
    if meta.get("emulated"):
        print(f"xferbench run: {dev} is emulated on the host: every accelerator path runs, but "
              "no time below is a measurement", file=out, flush=True)
    print(f"xferbench run: torch {torch_version} (CUDA {cuda}) on {dev.name}, machine {machine}, "
          f"suite {commit[:8]}, {opts.sweep} grid{' (quick)' if opts.quick else ''}: {total} "
          f"combinations to measure in {len(groups)} asv calls", file=out, flush=True)
    started = time.monotonic()
    progress = Progress(env["XFERBENCH_PROGRESS"], total, out).start(
        {c.full_name: list(c.param_names) for c in classes},
        expect={"executable": sys.executable, "torch": torch_version})
    saved: list[str] = []
    codes: list[int] = []
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    try:
        for i, group in enumerate(groups, 1):
            print(f"[{i}/{len(groups)}] {group.title} ({time.monotonic() - started:.0f} s so far)",
                  file=out, flush=True)
            cmd = [sys.executable, "-m", "asv", "run", "--config", conf,
                   "-E", f"existing:{wrapper}", "--set-commit-hash", commit,
                   "--machine", machine, "--record-samples", "--show-stderr"]
            for regex in group.regexes:
                cmd += ["--bench", regex]
            if opts.quick:
                cmd.append("--quick")
            check_wrapper(wrapper)  # the results must carry this interpreter's torch
            backup = backup_path(out_path)
            before = _digest(out_path)
            protect(out_path, backup)
            finished = False
            try:
                codes.append(run_asv(cmd, cwd=repo, env=env, lock_fd=lock_fd,
                                     results_file=out_path, stdout=out))
                finished = True
            finally:
                # an interrupted call may still have saved (asv marks a class whose process
                # died as failed, then saves): the file goes back as it was before the call;
                # numbers from another interpreter are never labelled either
                if progress.mismatch or not finished:
                    discard(out_path, backup)
                settle(out_path, backup)
            if progress.mismatch:
                raise XferbenchError(progress.mismatch + "; this class's results were discarded")
            label_results(out_path, torch_version, cuda, meta.get("python", ""), dev.name,
                          series_params)
            run_info["files"].append({"bench": " | ".join(group.regexes), "asv_exit": codes[-1]})
            if _digest(out_path) not in (None, before):
                saved += [b for c in group.classes for b in c.benchmarks()]
                run_info["outcomes"] = _outcomes(
                    [c for g in groups[:i] for c in g.classes], progress)
                record_run(out_path, meta, run_info, saved)
        run_info["complete"] = True
    except KeyboardInterrupt:
        print("\nxferbench run: interrupted; results saved so far are kept", file=sys.stderr)
        if saved:
            record_run(out_path, meta, run_info, saved)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.stop()
    if saved:
        run_info["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record_run(out_path, meta, run_info, saved)
    return _finish(args, out, opts, out_path=out_path, machine=machine,
                   torch_version=torch_version, commit=commit, progress=progress, codes=codes,
                   seconds=time.monotonic() - started, emulated=bool(meta.get("emulated")))


def _finish(args: argparse.Namespace, out: Any, opts: Options, *, out_path: str, machine: str,
            torch_version: str, commit: str, progress: Progress, codes: list[int],
            seconds: float, emulated: bool = False) -> int:
    failed = [row for rows in progress.outcomes.values() for row in rows
              if row["status"] == "failed"]
    if not os.path.exists(out_path):
        print("xferbench run: asv saved no results (see its output above)", file=sys.stderr)
        return EXIT_FAILED
    rs = load(opts.results_dir).filter(path=out_path)
    measured = sum(1 for r in rs if r.ok)
    rel = os.path.relpath(out_path)
    summary = {
        "results": out_path, "metadata": out_path[: -len(".json")] + ".metadata",
        "machine": machine, "torch": torch_version, "commit": commit, "quick": opts.quick,
        "seconds": round(seconds, 1), "measured": measured,
        "skipped": sum(1 for r in rs if r.value is not None and not r.ok),
        "failed": len(failed) + sum(1 for r in rs if r.value is None),
        "asv_exit": codes,
        "headlines": {v.headline.key: v.ratio for v in headlines(rs)},
    }
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        print(f"\nresults: {rel} ({seconds:.0f} s; {measured} measured, {summary['skipped']} "
              f"skipped, {summary['failed']} failed)")
        if opts.sweep == "smoke":
            print("smoke sweep: every branch ran at one size; it quotes no headline")
        else:
            print()
            print("\n".join(format_copy_rows(copy_rows(rs))))
            print()
            print("\n".join(format_headlines(headlines(rs))))
            print()
            print("\n".join(hazard_table(rs)))
        if emulated:
            print("the device is emulated: these times are host threads', not measurements")
        results = "" if opts.results_dir == os.path.abspath("results") else \
            f" --results {os.path.relpath(opts.results_dir)}"
        print(f"\nnext: xferbench publish{results}   (the dashboard, into site/)")
        print(f"      xferbench compare OTHER_TORCH {torch_version}{results}   (regressions)")
        print(f"      xferbench list{results}   (what can be cited; then xferbench cite ...)")
    if measured == 0:
        print("xferbench run: nothing was measured (see asv's output above)", file=sys.stderr)
        return EXIT_FAILED
    if summary["failed"]:
        for row in failed[:10]:
            print(f"xferbench run: failed: {row['params']}: {row['reason']}", file=sys.stderr)
        print(f"xferbench run: {summary['failed']} combinations failed (see asv's output above)",
              file=sys.stderr)
        return EXIT_FAILED
    return 0
