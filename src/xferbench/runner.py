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
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from ._errors import XferbenchError

# In this order: a run cut short by a time limit keeps the files it finished, so the
# smallest of the headline files goes before the largest.
BENCH_FILES = ("bench_copies", "bench_sync", "bench_creation")
LOCK_NAME = ".xferbench-run.lock"


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


# -- locating the suite ------------------------------------------------------------------------

def find_repo(start: str | None = None) -> str:
    """The folder holding asv.conf.json and benchmarks/, searched upwards from ``start``."""
    here = os.path.abspath(start or os.getcwd())
    candidates = [here, *_parents(here)]
    pkg_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    candidates.append(pkg_root)  # an editable install points back at its clone
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "asv.conf.json")) and os.path.isdir(
            os.path.join(folder, "benchmarks")
        ):
            return folder
    raise XferbenchError(
        "xferbench run needs the suite (asv.conf.json and benchmarks/): "
        "run it inside a clone of the xferbench repository"
    )


def _parents(path: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        yield parent
        path = parent


def _git_head(repo: str) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise XferbenchError(
            f"{repo} is not a git checkout with a commit: asv labels results by suite commit"
        ) from None
    return out.stdout.strip()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower() or "unknown"


def default_machine_name(meta: dict[str, Any]) -> str:
    gpu = meta.get("gpu_name") or ("cpu" if not meta.get("accelerator") else meta["accelerator"])
    return slug(f"{meta.get('hostname', 'host')}-{gpu}")


def torch_label(meta: dict[str, Any]) -> tuple[str, str]:
    """("2.13.0+cpu", "none") or ("2.14.1+cu128", "12.8"): the installed torch and its CUDA."""
    cuda = meta.get("cuda") or (f"hip{meta['hip']}" if meta.get("hip") else "none")
    return str(meta.get("torch", "unknown")), str(cuda)


# -- the lock ----------------------------------------------------------------------------------

@contextlib.contextmanager
def results_lock(results_dir: str) -> Iterator[None]:
    """Hold an exclusive lock on ``results_dir``; a second run is refused, not queued."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, LOCK_NAME)
    fh = open(path, "a+")
    try:
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): no concurrent-run protection
            pass
        except OSError:
            raise XferbenchError(
                f"another xferbench run is writing to {results_dir}: wait for it to finish "
                "or give another --results folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()


# -- asv plumbing ------------------------------------------------------------------------------

def _interpreter_wrapper(torch_version: str, cuda: str) -> str:
    """A stable path, naming torch and CUDA, that runs this interpreter.

    asv names an existing environment after its interpreter's absolute path; this path makes
    each (torch, CUDA) pair a series of its own, identical across clones of the suite.
    """
    folder = os.path.join(tempfile.gettempdir(), f"xferbench-{os.getuid()}",
                          slug(f"torch{torch_version}-cuda{cuda}"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "python")
    body = f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'
    try:
        with open(path) as fh:
            same = fh.read() == body
    except OSError:
        same = False
    if not same:
        tmp = path + f".{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(body)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    return path


def _current_branch(repo: str) -> str | None:
    out = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=repo,
                         capture_output=True, text=True)
    name = out.stdout.strip()
    return name if out.returncode == 0 and name and name != "HEAD" else None


def _asv_config(repo: str, results_dir: str, workdir: str) -> str:
    from asv import util as asv_util

    conf = asv_util.load_json(os.path.join(repo, "asv.conf.json"), js_comments=True)
    branch = _current_branch(repo)
    if branch:  # asv refuses a commit on a branch its configuration does not name
        conf["branches"] = [branch]
    conf.update({
        "repo": repo,
        "benchmark_dir": os.path.join(repo, "benchmarks"),
        "results_dir": results_dir,
        "html_dir": os.path.join(workdir, "html"),
        "env_dir": os.path.join(workdir, "env"),
    })
    path = os.path.join(workdir, "asv.conf.json")
    with open(path, "w") as fh:
        json.dump(conf, fh)
    return path


def _machine_file(home: str, name: str, meta: dict[str, Any]) -> None:
    """Register the machine without questions: asv reads ~/.asv-machine.json."""
    ram = ""
    try:
        ram = str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    cpu = str(meta.get("cpu_model", "unknown"))
    if meta.get("gpu_name"):
        cpu = f"{cpu}; GPU {meta['gpu_name']}"
    record = {"arch": str(meta.get("arch", "")), "cpu": cpu, "machine": name,
              "num_cpu": str(meta.get("cpu_count", "")), "os": str(meta.get("os", "")),
              "ram": ram}
    with open(os.path.join(home, ".asv-machine.json"), "w") as fh:
        json.dump({name: record, "version": 1}, fh)


def _results_file(results_dir: str, machine: str, commit: str, wrapper: str) -> str:
    from asv.environment import get_env_name

    env_name = get_env_name("existing", wrapper.replace(os.path.sep, "_"), {}, {})
    return os.path.join(results_dir, machine, f"{commit[:8]}-{env_name}.json")


def _load_ok(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
        return True
    except (OSError, ValueError):
        return False


def _backup_path(path: str) -> str:
    return path + ".xferbench-bak"


def _protect(path: str, backup: str) -> None:
    """Keep a copy of a results file that asv is about to rewrite (non-atomically)."""
    if os.path.exists(backup) and not _load_ok(path):
        os.replace(backup, path)  # a run killed mid-write: bring the earlier file back
    if os.path.exists(path):
        shutil.copy2(path, backup)


def _settle(path: str, backup: str) -> None:
    """After asv: a truncated file is replaced by its backup; the backup then goes."""
    if os.path.exists(backup):
        if not os.path.exists(path) or not _load_ok(path):
            os.replace(backup, path)
        else:
            os.remove(backup)


def label_results(path: str, torch_version: str, cuda: str, python: str, device: str) -> None:
    """Record the installed torch and CUDA in the results file's params, atomically."""
    if not os.path.exists(path) or not _load_ok(path):
        return
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    data.setdefault("params", {}).update(
        {"torch": torch_version, "cuda": cuda, "python": python, "device": device})
    data["requirements"] = {"torch": torch_version}
    _write_json_atomic(path, data)


def _write_json_atomic(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=4, sort_keys=True)
    os.replace(tmp, path)


def write_metadata(results_path: str, meta: dict[str, Any], run: dict[str, Any]) -> None:
    from .results import METADATA_SCHEMA_VERSION, metadata_path

    _write_json_atomic(metadata_path(results_path),
                       {"schema_version": METADATA_SCHEMA_VERSION, "metadata": meta, "run": run})


# -- the command -------------------------------------------------------------------------------

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
    from .devices import resolve_device
    from .metadata import collect

    if args.bench is not None:
        try:
            re.compile(args.bench)
        except re.error as exc:
            raise XferbenchError(
                f"--bench {args.bench!r} is not a regular expression: {exc}") from None
    dev = resolve_device(args.device)
    repo = find_repo()
    commit = _git_head(repo)
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
        wrapper = _interpreter_wrapper(torch_version, cuda)
        conf = _asv_config(repo, results_dir, work)
        _machine_file(work, machine, meta)
        out_path = _results_file(results_dir, machine, commit, wrapper)
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
                backup = _backup_path(out_path)
                cmd = [sys.executable, "-m", "asv", "run", "--config", conf,
                       "-E", f"existing:{wrapper}", "--set-commit-hash", commit,
                       "--machine", machine, "--record-samples", "--show-stderr",
                       "--bench", bench]
                if args.quick:
                    cmd.append("--quick")
                try:
                    _protect(out_path, backup)
                    code = _run_asv(cmd, repo, env)
                finally:
                    _settle(out_path, backup)
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
    from .headline import copy_rows, format_copy_rows, format_headlines, headlines
    from .results import load

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


def relabel(results_dir: str, commit: str) -> list[str]:
    """Give every results file under ``results_dir`` the suite commit ``commit``.

    For runs made in a copy of the tree without its git history (a GPU machine's snapshot
    commit): the files are renamed to the new commit's prefix, their .metadata with them.
    """
    from .results import iter_result_files, metadata_path

    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise XferbenchError(f"commit {commit!r} is not a full 40-character git hash")
    moved = []
    for _machine, path in list(iter_result_files(results_dir)):
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        old = str(data.get("commit_hash", ""))
        if old == commit:
            continue
        data["commit_hash"] = commit
        name = os.path.basename(path)
        new_path = os.path.join(os.path.dirname(path), commit[:8] + name[len(old[:8]):])
        _write_json_atomic(new_path, data)
        if new_path != path:
            os.remove(path)
        meta = metadata_path(path)
        if os.path.exists(meta):
            with open(meta, encoding="utf-8") as fh:
                sidecar = json.load(fh)
            sidecar.setdefault("run", {}).update({"commit": commit, "snapshot_commit": old})
            _write_json_atomic(metadata_path(new_path), sidecar)
            if metadata_path(new_path) != meta:
                os.remove(meta)
        moved.append(new_path)
    return moved


def main(argv: list[str] | None = None) -> int:
    """``python -m xferbench.runner relabel RESULTS COMMIT`` (used by scripts/gpu-check)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "relabel":
        print("usage: python -m xferbench.runner relabel RESULTS COMMIT", file=sys.stderr)
        return 2
    try:
        for path in relabel(args[1], args[2]):
            print(f"relabelled {path}")
    except XferbenchError as exc:
        print(f"xferbench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
