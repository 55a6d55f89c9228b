"""submitit, the one way tasks leave this process: a Slurm job array (one task per node, each
holding its node alone) or local processes; and what the scheduler says of each job now.

submitit asks Slurm for a job's state with ``sacct``, which needs Slurm's accounting
database; many clusters (and the test's one-node Slurm) have none. So the state comes from
``squeue`` (every job the controller still holds, finished ones included), then ``sacct``
where it answers, and for local jobs from the process itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from typing import Any

from ...errors import XferbenchError
from ...results.safefiles import alive

# submitit loads inside the functions that need it: it is an optional extra.

EXECUTORS = ("slurm", "local")
JOB_NAME = "xferbench-fleet"
INSTALL = "pip install 'xferbench[fleet]'"


def require_submitit() -> None:
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise XferbenchError(f"xferbench fleet run needs submitit, which is not installed: "
                             f"{INSTALL}") from None


def executor(kind: str, folder: str, opts: dict[str, Any]) -> Any:
    """A submitit executor for ``kind`` whose logs and pickles go to ``folder``."""
    import submitit

    if kind == "local":
        local = submitit.LocalExecutor(folder=folder)
        # submitit sets CUDA_VISIBLE_DEVICES from gpus_per_node (0 would hide every GPU)
        local.update_parameters(timeout_min=opts["time_min"],
                                gpus_per_node=opts["gpus_per_node"])
        return local
    try:
        ex = submitit.SlurmExecutor(folder=folder)
    except RuntimeError:  # submitit's "Could not detect srun"
        raise XferbenchError("Slurm's srun is not on PATH: this machine cannot submit to "
                             "Slurm (use --executor local to run the tasks here)") from None
    ex.update_parameters(
        job_name=JOB_NAME, time=opts["time_min"], nodes=1, ntasks_per_node=1,
        # a benchmark shares its node with nothing: another job's copies would share the link
        exclusive=True, partition=opts.get("partition"),
        gpus_per_node=opts["gpus_per_node"] or None)
    return ex


def submit(ex: Any, fn: Any, specs: list[Any]) -> list[Any]:
    """Submit ``fn(spec)`` for each spec as one job array; returns submitit's jobs. A refusal
    by sbatch is one sentence, sbatch's own (submitit would print its whole stderr)."""
    import submitit

    quiet = io.StringIO()
    try:
        with contextlib.redirect_stderr(quiet):
            return list(ex.map_array(fn, specs))
    except submitit.core.utils.FailedJobError as exc:
        raise XferbenchError(f"Slurm refused the job: {_sbatch_error(str(exc))}") from None
    except FileNotFoundError as exc:
        raise XferbenchError(f"{exc.filename or 'sbatch'} is not on PATH: this machine "
                             "cannot submit to Slurm (use --executor local to run the tasks "
                             "here)") from None


def _sbatch_error(text: str) -> str:
    """sbatch's first error and, where it differs, its last (the verdict), without their
    "sbatch: error: " prefixes: "invalid partition specified: nope (Batch job submission
    failed: Invalid partition name specified)"."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = [re.split(r"\b(?:error|fatal):", ln, maxsplit=1)[-1].strip().rstrip(".")
            for ln in lines if re.search(r"\b(?:error|fatal):", ln)] or lines or ["no message"]
    return said[0] if said[0] == said[-1] else f"{said[0]} ({said[-1]})"


def log_path(folder: str, job_id: str) -> str:
    """The log submitit keeps of a task's stderr."""
    return os.path.join(folder, f"{job_id}_0_log.err")


def states(kind: str, job_ids: list[str], live: dict[str, Any] | None = None
           ) -> dict[str, str | None]:
    """job id -> the scheduler's word for it now ("PENDING", "RUNNING", "COMPLETED",
    "CANCELLED", ...), None where it knows nothing of the job any more."""
    if kind == "local":
        return {j: _local_state(j, (live or {}).get(j)) for j in job_ids}
    found = _squeue(job_ids)
    missing = [j for j in job_ids if j not in found]
    if missing:
        found.update(_sacct(missing))
    return {j: found.get(j) for j in job_ids}


def _run(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _parse(text: str | None, wanted: list[str]) -> dict[str, str]:
    out = {}
    for line in (text or "").splitlines():
        job, _, state = line.strip().partition("|")
        if job in wanted and state:
            out[job] = state.split()[0].rstrip("+")  # "CANCELLED by 0", "CANCELLED+"
    return out


def _squeue(job_ids: list[str]) -> dict[str, str]:
    arrays = sorted({j.split("_")[0] for j in job_ids})
    text = _run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T", "-j", ",".join(arrays)])
    if text is None and len(arrays) > 1:  # one id the controller forgot fails the whole call
        text = "\n".join(_run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T", "-j", a]) or ""
                         for a in arrays)
    return _parse(text, job_ids)


def _sacct(job_ids: list[str]) -> dict[str, str]:
    arrays = sorted({j.split("_")[0] for j in job_ids})
    return _parse(_run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(arrays)]),
                  job_ids)


def _local_state(job_id: str, job: Any) -> str | None:
    """A local job is its controller process: submitit's job object polls it where this
    process started it; after the fact, the process id (if it is still a submitit one)."""
    if job is not None:
        return "RUNNING" if job.state == "RUNNING" else None
    if not job_id.isdigit():
        return None
    if not os.path.isdir("/proc"):  # no process table to read: whether the id is alive
        return "RUNNING" if alive(int(job_id)) else None
    try:
        with open(f"/proc/{job_id}/cmdline", "rb") as fh:
            return "RUNNING" if b"submitit" in fh.read() else None
    except OSError:
        return None
