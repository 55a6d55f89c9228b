"""What runs on each node: ``xferbench run`` against the node's PyTorch into a staging folder
of its own, named after the job and the node, then the completion marker, written last.

submitit pickles ``run_task`` by reference and calls it on the node, in a process of its own;
``xferbench run`` runs as a child of that process, as a user would type it, so the node's run
has its lock, its reaper and its interrupt handling (Slurm's SIGTERM on ``scancel``, a time
limit or a preemption is an interrupt to it: it keeps only what it saved, and the task writes
``failed.json``, never ``finished.json``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import traceback
from dataclasses import dataclass
from typing import Any

from ...errors import XferbenchError
from ...results import load
from ...results.machines import slug
from ...results.merging import FAILED, FINISHED, STARTED, write_marker
from ...results.safefiles import remove_tree
from .job import now, stage_folders

# submitit loads inside the functions that need it: it is an optional extra.

#: Lines of the run's output kept in failed.json to say why.
TAIL = 2


@dataclass(frozen=True)
class TaskSpec:
    """One node's share of a fleet job: everything the task needs, nothing read from the
    submitting machine's environment later."""

    job_folder: str
    index: int
    repo: str  # the suite, on the shared file system
    python: str  # the interpreter that runs xferbench run (the node's PyTorch)
    run_args: tuple[str, ...]  # --quick, --bench, --sweep, --device, --machine
    node_key: str = ""  # what makes it one node when merged (job.node_key), in its markers
    job_id: str = ""  # set by the task from submitit's environment


def node_name() -> str:
    """The node as the scheduler names it (Slurm), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname() or "node"


def current_job_id() -> str:
    """The running task's job id ("41_1" in an array), from submitit's environment."""
    import submitit

    return str(submitit.JobEnvironment().job_id)


def run_task(spec: TaskSpec) -> dict[str, Any]:
    job_id = spec.job_id or current_job_id()
    node = node_name()
    for old in stage_folders(spec.job_folder, job_id, spec.index):
        remove_tree(old)  # Slurm requeued this job (a preemption), maybe elsewhere: anew
    stage = os.path.join(spec.job_folder, "stage", f"{job_id}-{slug(node)}")
    if os.path.exists(stage):  # another task's, under a reused id (a local process id)
        stage += f"-task{spec.index}"
    os.makedirs(stage)
    record: dict[str, Any] = {"task": spec.index, "job_id": job_id, "node": node,
                              "node_key": spec.node_key,
                              "host": socket.gethostname(), "pid": os.getpid(),
                              "started_at": now()}
    write_marker(stage, STARTED, record)
    try:
        record.update(_run(spec, stage))
    except BaseException as exc:
        reason = f"the task failed: {exc}" if isinstance(exc, XferbenchError) else \
            f"the task failed: {traceback.format_exception_only(type(exc), exc)[-1].strip()}"
        write_marker(stage, FAILED, {**record, "reason": reason, "finished_at": now()})
        raise
    record["finished_at"] = now()
    if record.get("exit") in (0, 3) and record.get("measured"):
        write_marker(stage, FINISHED, record)  # last, atomically: the run is whole
    else:
        write_marker(stage, FAILED, record)
    return record


def _run(spec: TaskSpec, stage: str) -> dict[str, Any]:
    results = os.path.join(stage, "results")
    cmd = [spec.python, "-m", "xferbench", "run", "--results", results, *spec.run_args]
    log = os.path.join(stage, "run.log")
    with open(log, "x", encoding="utf-8") as fh:  # a new file in the new stage folder
        code = subprocess.run(cmd, cwd=spec.repo, stdout=fh, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL).returncode
    out: dict[str, Any] = {"exit": code, "command": cmd}
    if code in (130, 143, -15):
        out["reason"] = (f"xferbench run was interrupted (exit {code}): cancelled, out of "
                         "time or preempted")
        return out
    if code not in (0, 3):
        out["reason"] = f"xferbench run exited {code}: {_tail(log)}"
        return out
    if not os.path.isfile(os.path.join(results, "benchmarks.json")):
        out["reason"] = f"xferbench run saved no results: {_tail(log)}"
        return out
    rs = load(results)  # the files parse: a damaged one fails the task, not the merge
    out.update(machine=", ".join(rs.machines()), torch=", ".join(rs.torch_versions()),
               measured=sum(r.ok for r in rs))
    if not out["measured"]:
        out["reason"] = f"xferbench run measured nothing: {_tail(log)}"
    return out


def _tail(path: str) -> str:
    """The run's last words, as one line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh.read().splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return " / ".join(lines[-TAIL:])[-500:] or "no output"
