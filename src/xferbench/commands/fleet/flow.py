"""fleet run, status and merge: plan the job folder, submit through submitit, follow the
tasks until each is done or failed, merge the finished ones (``merging``), report."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...errors import XferbenchError
from ...results import load
from ...results.merging import Merged, Source, merge, open_source, place
from ...results.repo import git_head, load_asv_config
from ...results.safefiles import remove_file, remove_tree
from ...results.suite import find_clone, find_clone_or_refuse
from .executors import executor, log_path, states, submit
from .job import (
    DONE,
    FAILED_STATE,
    MERGED,
    PLAN,
    QUEUED,
    RUNNING,
    TaskState,
    is_job_folder,
    load_plan,
    new_plan,
    node_key,
    now,
    save,
    task_state,
    waiting_tasks,
)
from .report import format_merged, format_states, hints
from .task import TaskSpec, run_task

EXIT_FAILED = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Request:
    """What fleet run was asked, checked."""

    executor: str
    nodes: int
    partition: str | None
    gpus_per_node: int
    time_min: int
    machines: tuple[str, ...]
    run_args: tuple[str, ...]
    python: str
    folder: str | None
    results: str | None  # None: results/ (a new job), the job's own (--resume)
    poll_s: float = 2.0


def start(req: Request) -> int:
    repo = find_clone_or_refuse("xferbench fleet run")  # the nodes run it from the shared clone
    load_asv_config(repo)  # a damaged asv.conf.json is said here, not by every node
    git_head(repo)  # each node labels its results with the suite's commit
    folder = os.path.abspath(req.folder or os.path.join(
        repo, "fleet-jobs", time.strftime("%Y%m%d-%H%M%S")))
    if os.path.isdir(folder) and os.listdir(folder):
        raise XferbenchError(f"--folder {folder} already holds files: give a new folder, or "
                             f"--resume {folder} to resubmit its tasks that did not finish")
    made = folder  # the outermost folder made here: a refusal takes it back
    while not os.path.exists(os.path.dirname(made)):
        made = os.path.dirname(made)
    made = made if not os.path.exists(folder) else ""
    os.makedirs(folder, exist_ok=True)
    plan = new_plan(folder, executor=req.executor, repo=repo, python=req.python,
                    results=req.results or os.path.abspath("results"),
                    run_args=list(req.run_args),
                    scheduler={"partition": req.partition, "gpus_per_node": req.gpus_per_node,
                               "time_min": req.time_min},
                    tasks=[{"index": i, "machine": req.machines[i] if req.machines else None,
                            "jobs": []} for i in range(req.nodes)],
                    submissions=[])
    try:
        save(plan)
        live = _submit(plan, list(range(req.nodes)))
    except BaseException:  # a refused submission leaves no job folder behind
        remove_tree(made) if made else _empty(folder)
        raise
    return _follow_and_merge(plan, live, req.poll_s)


def _empty(folder: str) -> None:
    """What this run wrote into the (empty) job folder it was given, and nothing else."""
    remove_tree(os.path.join(folder, "submitit"))
    remove_file(os.path.join(folder, PLAN))


def local_cap() -> int:
    """How many local tasks run at once: one per core this process may run on (its CPU
    affinity, which taskset and a cgroup's cpuset narrow), each task a whole xferbench run."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity to read (macOS): every core
        return max(1, os.cpu_count() or 1)


def resume(folder: str, req: Request, *, partition: str | None, time_min: int | None) -> int:
    plan = load_plan(folder)
    if partition is not None:
        plan["scheduler"]["partition"] = partition
    if time_min is not None:
        plan["scheduler"]["time_min"] = time_min
    if req.results is not None:
        plan["results"] = req.results
    current = current_states(plan, {})
    again = [s.index for s in current if s.state == FAILED_STATE]
    print(f"xferbench fleet: job folder {folder}: "
          f"{_count(current, DONE, MERGED)} of {len(current)} tasks finished; "
          f"resubmitting {len(again)}" + (f" ({', '.join(map(str, again))})" if again else ""))
    live = _submit(plan, again) if again else {}
    return _follow_and_merge(plan, live, req.poll_s)


def _count(sts: Iterable[TaskState], *which: str) -> int:
    return sum(1 for s in sts if s.state in which)


def _submit(plan: dict[str, Any], indices: list[int], *, running: int = 0,
            announce: bool = True) -> dict[str, Any]:
    """Submit the tasks ``indices``; a local job submits as many as there are free cores
    (``running`` of them busy) and holds the rest back (``plan["waiting"]``) for ``follow``
    to submit as cores come free. Returns submitit's jobs by id."""
    held: list[int] = []
    if plan["executor"] == "local":
        cap = local_cap()
        free = max(0, cap - running)
        indices, held = indices[:free], indices[free:]
        plan["waiting"] = {"tasks": held, "pid": os.getpid(), "cap": cap} if held else {}
        if held and announce:
            print(f"xferbench fleet: {len(indices) + len(held)} local tasks on this machine's "
                  f"{cap} core{'s' if cap != 1 else ''}: at most {cap} at a time, the others "
                  "queued until one finishes", flush=True)
    if not indices:
        save(plan)
        return {}
    ex = executor(plan["executor"], os.path.join(plan["folder"], "submitit"), plan["scheduler"])
    specs = []
    for i in indices:
        machine = plan["tasks"][i].get("machine")
        args = (*plan["run_args"], *(("--machine", machine) if machine else ()))
        specs.append(TaskSpec(plan["folder"], i, plan["repo"], plan["python"], args,
                              node_key(plan, i)))
    jobs = submit(ex, run_task, specs)
    for i, job in zip(indices, jobs):
        plan["tasks"][i]["jobs"].append(str(job.job_id))
    plan["submissions"].append({"at": now(), "tasks": indices,
                                "jobs": [str(j.job_id) for j in jobs]})
    save(plan)
    where = "to Slurm" if plan["executor"] == "slurm" else "as local processes"
    if announce:
        print(f"xferbench fleet: {len(jobs)} task{'s' if len(jobs) != 1 else ''} submitted "
              f"{where} (job {', '.join(str(j.job_id) for j in jobs)}); job folder "
              f"{plan['folder']}", flush=True)
    return {str(j.job_id): j for j in jobs}


def _start_waiting(plan: dict[str, Any], current: list[TaskState]) -> dict[str, Any]:
    """Local tasks held back, submitted as cores come free."""
    waiting = list((plan.get("waiting") or {}).get("tasks") or ())
    if not waiting:
        return {}
    running = sum(1 for s in current if s.job_id and s.state in (QUEUED, RUNNING))
    if running >= local_cap():
        return {}
    return _submit(plan, waiting, running=running, announce=False)


def current_states(plan: dict[str, Any], live: dict[str, Any]) -> list[TaskState]:
    """Every task's state now: the scheduler is asked first, then the markers are read."""
    held, holder = waiting_tasks(plan)
    ids = [t["jobs"][-1] for t in plan["tasks"] if t.get("jobs") and t["index"] not in held]
    said = states(plan["executor"], ids, live)
    logs = os.path.join(plan["folder"], "submitit")
    out = []
    for t in plan["tasks"]:
        job = t["jobs"][-1] if t.get("jobs") else None
        out.append(task_state(plan, t["index"], said.get(job) if job else None,
                              log_path(logs, job) if job else None,
                              held=holder if t["index"] in held else None))
    return out


def follow(plan: dict[str, Any], live: dict[str, Any], poll_s: float) -> list[TaskState]:
    """Poll until every task is done or failed, printing each change of state."""
    started = time.monotonic()
    last: dict[int, TaskState] = {}
    while True:
        now_states = current_states(plan, live)
        for s in now_states:
            if last.get(s.index) != s and s.job_id is not None:  # held back: said once
                print(f"[{time.monotonic() - started:5.0f} s] {s.line()}", flush=True)
            last[s.index] = s
        if all(s.final for s in now_states):
            return now_states
        live.update(_start_waiting(plan, now_states))
        time.sleep(poll_s)


def _follow_and_merge(plan: dict[str, Any], live: dict[str, Any], poll_s: float) -> int:
    try:
        final = follow(plan, live, poll_s)
    except KeyboardInterrupt:
        folder = plan["folder"]
        jobs = "the jobs go on" if plan["executor"] == "slurm" else \
            "local tasks started from this terminal stopped with it"
        print(f"\nxferbench fleet: interrupted; {jobs}: 'xferbench fleet status {folder}' "
              f"says where they are, 'xferbench fleet merge {folder}' merges what finished, "
              f"'xferbench fleet run --resume {folder}' runs the rest again", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        done, failed = merge_job_tasks(plan, final, plan["results"], strict=False)
    except XferbenchError as exc:  # the destination, not the tasks: their results are kept
        raise XferbenchError(f"{exc}; the tasks' results are kept in the job folder: "
                             f"'xferbench fleet merge {plan['folder']} --results "
                             f"{plan['results']}' merges them") from None
    for line in format_merged(done):
        print(line)
    failed += [s for s in final if s.state == FAILED_STATE]
    for line in hints(plan, failed):
        print(line, file=sys.stderr)
    return EXIT_FAILED if failed else 0


def merge_job_tasks(plan: dict[str, Any], current: list[TaskState], dest: str, *,
                    strict: bool, again: bool = False) -> tuple[list[Merged], list[TaskState]]:
    """Merge the job's finished tasks into ``dest`` (``again``: those merged before too).
    A finished task whose files do not parse is bad input where ``strict`` (nothing merged),
    else that task counts as failed and the others are merged."""
    sources, failed = job_sources(plan, current, strict=strict, again=again)
    return merge_sources(sources, dest, [plan]), failed


def job_sources(plan: dict[str, Any], current: list[TaskState], *, strict: bool,
                again: bool = False) -> tuple[list[Source], list[TaskState]]:
    sources, failed = [], []
    for s in current:
        if s.state != DONE and not (again and s.state == MERGED):
            continue
        label = f"task {s.index} (job {s.job_id} on {s.node})"
        try:
            sources.append(open_source(s.stage or "", label, node_key(plan, s.index)))
        except XferbenchError as exc:
            if strict:
                raise
            failed.append(TaskState(s.index, s.job_id, FAILED_STATE, s.node, stage=s.stage,
                                    reason=f"its results cannot be merged: {exc}"))
    return sources, failed


def merge_sources(sources: list[Source], dest: str, plans: list[dict[str, Any]]) -> list[Merged]:
    """Place and merge ``sources`` into ``dest``; record in each job's plan where its tasks
    went, so that a later merge of the job gives them the same names."""
    if not sources:
        return []
    _refuse_emulated(sources, dest)
    fixed = {}
    for plan in plans:
        for index, rec in plan.get("merged", {}).items():
            if rec.get("results") == dest:
                fixed[(node_key(plan, int(index)), rec["machine"])] = rec["target"]
    for src in sources:
        if os.path.realpath(src.results_dir) == os.path.realpath(dest):
            raise XferbenchError(f"{src.folder} is the results folder merged into: give "
                                 "another --results")
    done = merge(place(sources, dest, fixed), dest)
    by_node = {node_key(p, t["index"]): (p, t["index"]) for p in plans for t in p["tasks"]}
    for m in done:
        if m.placement.source.node in by_node:
            plan, index = by_node[m.placement.source.node]
            plan["merged"][str(index)] = {
                "machine": m.placement.machine, "target": m.placement.target, "results": dest,
                "stage": os.path.relpath(m.placement.source.folder, plan["folder"]),
                "at": now()}
    for plan in plans:
        save(plan)
    return done


def _refuse_emulated(sources: list[Source], dest: str) -> None:
    """Emulated times are not measurements: never into the checkout's own results/."""
    clone = find_clone()
    if clone is None:
        return
    own = os.path.join(clone, "results")
    if os.path.realpath(dest) != os.path.realpath(own):
        return
    for src in sources:
        if any(side.metadata and side.metadata.emulated
               for side in load(src.results_dir).sidecars.values()):
            raise XferbenchError(f"{src.folder} holds results from an emulated device: its "
                                 f"times are not measurements, so they do not go into {dest};"
                                 " give --results DIR")


def status(folder: str) -> int:
    """fleet status: every task's state; exit 3 where a task failed (its results are lost
    until it is run again), else 0."""
    plan = load_plan(folder)
    current = current_states(plan, {})
    for line in format_states(plan, current):
        print(line)
    failed = [s for s in current if s.state == FAILED_STATE]
    for line in hints(plan, failed, current):
        print(line)
    return EXIT_FAILED if failed else 0


def merge_folders(folders: list[str], dest: str) -> int:
    """fleet merge: every folder is checked before anything is merged."""
    sources: list[Source] = []
    jobs: list[tuple[dict[str, Any], list[TaskState]]] = []
    for f in folders:
        if is_job_folder(f):
            plan = load_plan(f)
            current = current_states(plan, {})
            sources += job_sources(plan, current, strict=True, again=True)[0]
            jobs.append((plan, current))
        else:
            sources.append(open_source(f))
    if not sources:
        raise XferbenchError(f"nothing to merge: no task of {', '.join(folders)} has finished")
    done = merge_sources(sources, dest, [plan for plan, _ in jobs])
    for line in format_merged(done):
        print(line)
    failed = 0
    for plan, current in jobs:
        bad = [s for s in current if s.state == FAILED_STATE]
        failed += len(bad)
        for line in hints(plan, bad, current):
            print(line, file=sys.stderr)
    return EXIT_FAILED if failed else 0
