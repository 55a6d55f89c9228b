"""The job folder: what a fleet run asked (``fleet.json``), the job ids each task was
submitted as, the staging folder each task writes, and each task's state read from its
markers and the scheduler's answer.

  <job>/fleet.json                 the plan, every submission's job ids, what was merged where
  <job>/submitit/                  submitit's pickles and each task's log
  <job>/stage/<jobid>-<node>/      one task's run: started.json, run.log, results/, and last
                                   finished.json (the completion marker) or failed.json
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass
from typing import Any

from ...errors import XferbenchError
from ...results.merging import FAILED, FINISHED, STARTED, read_marker
from ...results.safefiles import alive, load_json, path_kind, write_json_atomic

PLAN = "fleet.json"
KIND = "xferbench fleet job"
SCHEMA_VERSION = 1

QUEUED, RUNNING, DONE, FAILED_STATE, MERGED = "queued", "running", "done", "failed", "merged"
#: The scheduler's words for a job that is waiting, and for one that runs.
WAITING = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING",
           "SUSPENDED", "STOPPED"}
ACTIVE = {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_plan(folder: str, **fields: Any) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": KIND, "created_at": now(),
            "folder": os.path.abspath(folder), **fields, "merged": {}}


def save(plan: dict[str, Any]) -> None:
    write_json_atomic(os.path.join(plan["folder"], PLAN), plan)


def load_plan(folder: str) -> dict[str, Any]:
    """The plan of the job folder ``folder``; one sentence where it is not one."""
    path = os.path.join(folder, PLAN)
    kind = path_kind(folder)
    if not kind.is_folder:
        raise XferbenchError(f"{folder} is not a fleet job folder: "
                             + kind.refusal("it", "a folder"))
    if not os.path.isfile(path):
        raise XferbenchError(f"{folder} is not a fleet job folder: it has no {PLAN} "
                             "(xferbench fleet run writes one)")
    plan = load_json(path, "fleet job file")
    if not isinstance(plan, dict) or plan.get("kind") != KIND:
        raise XferbenchError(f"{path} is not a fleet job file (its 'kind' is not {KIND!r})")
    if plan.get("schema_version") != SCHEMA_VERSION:
        raise XferbenchError(f"{path} has schema_version {plan.get('schema_version')!r}: this "
                             f"xferbench reads version {SCHEMA_VERSION}")
    plan["folder"] = os.path.abspath(folder)  # the folder may have been copied or moved
    return plan


def is_job_folder(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, PLAN))


def stage_folders(folder: str, job_id: str, index: int) -> list[str]:
    """The staging folders task ``index`` made as job ``job_id`` (named after the job and
    its node; one, unless Slurm requeued the job onto another node mid-run)."""
    found = sorted(glob.glob(os.path.join(glob.escape(folder), "stage",
                                          f"{glob.escape(job_id)}-*")))
    return [f for f in found if (read_marker(f, STARTED) or {}).get("task") == index]


def stage_folder(plan: dict[str, Any], job_id: str, index: int) -> str | None:
    found = stage_folders(plan["folder"], job_id, index)
    return found[-1] if found else None


def node_key(plan: dict[str, Any], index: int) -> str:
    """What makes a task one node when its results are merged: the job and the task."""
    return f"{plan['created_at']} task {index}"


@dataclass(frozen=True)
class TaskState:
    index: int
    job_id: str | None  # the latest submission's
    state: str  # queued, running, done, failed, merged
    node: str | None = None
    machine: str | None = None
    stage: str | None = None
    reason: str | None = None  # why it failed, or what it merged into

    @property
    def final(self) -> bool:
        return self.state in (DONE, FAILED_STATE, MERGED)

    def line(self) -> str:
        """"task 1 (job 41_1): running on node c2"."""
        text = f"task {self.index} (job {self.job_id or 'not submitted'}): {self.state}"
        if self.node:
            text += f" on {self.node}"
        if self.machine and self.state in (DONE, MERGED):
            text += f", machine {self.machine}"
        return text + (f": {self.reason}" if self.reason else "")


def waiting_tasks(plan: dict[str, Any]) -> tuple[set[int], bool]:
    """The tasks a local fleet run holds back until a core is free, and whether the run that
    is to start them is still there (``plan["waiting"]``: its tasks, pid and cap)."""
    waiting = plan.get("waiting") or {}
    tasks = {int(i) for i in waiting.get("tasks") or ()}
    pid = waiting.get("pid")
    return tasks, bool(tasks) and isinstance(pid, int) and alive(pid)


def task_state(plan: dict[str, Any], index: int, scheduler: str | None,
               log_hint: str | None = None, *, held: bool | None = None) -> TaskState:
    """Task ``index`` as its markers and the scheduler's word for its job (None: the
    scheduler no longer knows it) say. The markers are read after the scheduler was asked,
    so a task that finished as its job ended is seen finished. ``held``: the task waits for
    a free core (True while the run that holds it back is there, False once it is gone)."""
    if held is not None:
        cap = (plan.get("waiting") or {}).get("cap")
        return TaskState(index, None, QUEUED, reason=f"waiting for a free core ({cap} at a "
                                                     "time here)") if held else \
            TaskState(index, None, FAILED_STATE, reason="never submitted: the fleet run that "
                                                        "was to start it stopped")
    jobs = plan["tasks"][index].get("jobs") or []
    job_id = jobs[-1] if jobs else None
    if job_id is None:
        return TaskState(index, None, FAILED_STATE, reason="never submitted")
    stage = stage_folder(plan, job_id, index)
    started = read_marker(stage, STARTED) if stage else None
    node = (started or {}).get("node")
    merged = plan.get("merged", {}).get(str(index))
    if stage and merged and merged.get("stage") == os.path.relpath(stage, plan["folder"]):
        return TaskState(index, job_id, MERGED, node, merged.get("target"), stage,
                         f"in {merged.get('results')}")
    finished = read_marker(stage, FINISHED) if stage else None
    if finished is not None:
        return TaskState(index, job_id, DONE, node, finished.get("machine"), stage)
    failed = read_marker(stage, FAILED) if stage else None
    if failed is not None:
        return TaskState(index, job_id, FAILED_STATE, node, stage=stage,
                         reason=str(failed.get("reason")))
    if scheduler in WAITING and started is None:
        return TaskState(index, job_id, QUEUED)
    if scheduler in WAITING or scheduler in ACTIVE:
        return TaskState(index, job_id, RUNNING, node, stage=stage)
    why = f"its job ended {scheduler}" if scheduler else "its job left the queue"
    where = f" (see {log_hint})" if log_hint else ""
    return TaskState(index, job_id, FAILED_STATE, node, stage=stage,
                     reason=f"{why} before the run finished{where}")
