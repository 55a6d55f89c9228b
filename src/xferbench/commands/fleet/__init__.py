"""``xferbench fleet``: the suite on many machines at once, through submitit (a Slurm job
array, or local processes), merged into one results folder.

  fleet run      submit one task per node, follow them, merge what finished, say what each
                 node measured (``--resume DIR`` resubmits only the tasks that did not finish)
  fleet status   the tasks of a job folder now: queued, running, done, merged, failed and why
                 (exit 3 where a task failed)
  fleet merge    job folders, task folders or results folders copied from anywhere (a
                 Kubernetes pod's volume, a CI runner's artefacts) into the results folder

Exit status: 0 done; 2 bad input (one sentence, nothing submitted or merged); 3 a task
failed (its results are lost, every other task's are merged); 130 interrupted (the jobs go on).
The module layout: ``job`` (the job folder and task states), ``executors`` (submitit),
``task`` (what runs on a node), ``flow`` (submit, follow, merge, report).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from ...errors import XferbenchError
from ...practices import SWEEPS
from ...results.machines import check_machine_name
from ...results.safefiles import check_output_folder
from .executors import EXECUTORS, require_submitit
from .flow import Request, merge_folders, resume, start, status


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "fleet", allow_abbrev=False, help="the suite on many machines (Slurm, via submitit)",
        description="Run the suite on many machines through submitit (a Slurm job array or "
                    "local processes) and merge each node's results into RESULTS/<machine>/. "
                    "Exit status: 0 done, 2 bad input, 3 a task failed (the others are "
                    "merged), 130 interrupted (the jobs go on).")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", parser_class=type(p))
    _run_parser(verbs)
    st = verbs.add_parser("status", allow_abbrev=False, help="the tasks of a job folder now",
                          description="Each task of a fleet job folder: queued, running, "
                                      "done, merged or failed, with why. Exit status: 0, 3 "
                                      "when a task failed (its results are lost until it runs "
                                      "again), or 2 for a folder that is not a job folder.")
    st.add_argument("folder", metavar="DIR", help="the job folder fleet run made")
    st.set_defaults(func=cmd_status)
    mg = verbs.add_parser("merge", allow_abbrev=False,
                          help="merge job, task or results folders into the results folder",
                          description="Merge fleet job folders (their finished tasks), task "
                                      "folders, or results folders copied from anywhere into "
                                      "RESULTS/<machine>/. Only finished runs whose files all "
                                      "parse are merged; a bad folder merges nothing. Exit "
                                      "status: 0 merged, 2 bad input (nothing merged), 3 a "
                                      "job's task failed.")
    mg.add_argument("folders", nargs="+", metavar="DIR")
    mg.add_argument("--results", default="results", metavar="DIR",
                    help="the results folder to merge into (default: results)")
    mg.set_defaults(func=cmd_merge)
    p.set_defaults(func=lambda args: p.error("a verb is required: run, status or merge"),
                   needs_torch="the runs it submits")


def _run_parser(verbs: Any) -> None:
    r = verbs.add_parser("run", allow_abbrev=False, help="submit one task per node and merge",
                         description="Submit one task per node through submitit; each runs "
                                     "xferbench run into a staging folder of its own in the "
                                     "job folder (on the shared file system), and the results "
                                     "of every task that finished are merged.")
    r.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="slurm (default: a job array, each task holding its node alone) or "
                        "local (processes on this machine, at most one per core at a time)")
    r.add_argument("--nodes", type=int, default=None, metavar="N",
                   help="tasks, one per node (default 1)")
    r.add_argument("--partition", default=None, metavar="P", help="Slurm partition")
    r.add_argument("--gpus-per-node", type=int, default=None, metavar="G",
                   help="GPUs each task asks for (default 1; 0 asks for none)")
    r.add_argument("--time", type=int, default=None, metavar="MIN",
                   help="each task's time limit in minutes (default 60)")
    r.add_argument("--machine", action="append", default=None, metavar="NAME",
                   help="once per node: the machine names of the tasks, in order (default: "
                        "each node's host and GPU)")
    r.add_argument("--quick", action="store_true", help="as xferbench run --quick")
    r.add_argument("--bench", default=None, metavar="REGEX", help="as xferbench run --bench")
    r.add_argument("--sweep", choices=SWEEPS, default=None, help="as xferbench run --sweep")
    r.add_argument("--device", default=None, help="as xferbench run --device (default: auto)")
    r.add_argument("--python", default=None, metavar="PATH",
                   help="the interpreter each node runs xferbench run with, on every node "
                        "(default: this one)")
    r.add_argument("--folder", default=None, metavar="DIR",
                   help="the job folder, on the file system the nodes share (default: "
                        "fleet-jobs/<date>-<time> in the suite's checkout)")
    r.add_argument("--results", default=None, metavar="DIR",
                   help="the results folder to merge into (default: results; with --resume, "
                        "the job's)")
    r.add_argument("--resume", default=None, metavar="DIR",
                   help="resubmit the tasks of the job folder DIR that did not finish, with "
                        "its options (--time and --partition may be given anew)")
    r.add_argument("--poll", type=float, default=2.0, metavar="S", help=argparse.SUPPRESS)
    r.set_defaults(func=cmd_run)


#: What --resume takes from the job folder; --time and --partition may be given anew.
RUN_OPTIONS = ("executor", "nodes", "gpus_per_node", "machine", "quick", "bench", "sweep",
               "device", "python", "folder")


def check_request(args: argparse.Namespace) -> Request:
    """Everything fleet run was asked, checked before anything is written or submitted."""
    if args.nodes is not None and args.nodes < 1:
        raise XferbenchError(f"--nodes {args.nodes} is not a node count: give 1 or more")
    if args.time is not None and args.time < 1:
        raise XferbenchError(f"--time {args.time} is not a time limit: give minutes, 1 or more")
    if args.gpus_per_node is not None and args.gpus_per_node < 0:
        raise XferbenchError(f"--gpus-per-node {args.gpus_per_node} is not a GPU count: give "
                             "0 or more")
    if args.resume is not None:
        given = [f"--{o.replace('_', '-')}" for o in RUN_OPTIONS
                 if getattr(args, o) not in (None, False)]
        if given:
            raise XferbenchError(f"--resume reuses the job's options: {', '.join(given)} "
                                 "cannot be given with it")
    nodes = args.nodes or 1
    machines = [check_machine_name(m) for m in args.machine or []]
    if machines and len(machines) != nodes:
        raise XferbenchError(f"--machine is given {len(machines)} times for --nodes "
                             f"{nodes}: give it once per node, or not at all")
    twice = sorted({m for m in machines if machines.count(m) > 1})
    if twice:
        raise XferbenchError(f"--machine {twice[0]} is given twice: two nodes never share a "
                             "machine name")
    if args.bench is not None:
        try:
            re.compile(args.bench)
        except re.error as exc:
            raise XferbenchError(f"--bench {args.bench!r} is not a regular expression: "
                                 f"{exc}") from None
    if args.results is not None:
        check_output_folder("--results", args.results)
    python = os.path.abspath(args.python) if args.python else sys.executable
    if args.python and not os.access(python, os.X_OK):
        raise XferbenchError(f"--python {args.python} is not an interpreter this machine can "
                             "run")
    return Request(executor=args.executor or "slurm", nodes=nodes, partition=args.partition,
                   gpus_per_node=1 if args.gpus_per_node is None else args.gpus_per_node,
                   time_min=args.time or 60,
                   machines=tuple(machines), run_args=_run_args(args), python=python,
                   folder=args.folder,
                   results=os.path.abspath(args.results) if args.results else None,
                   poll_s=max(0.1, args.poll))


def _run_args(args: argparse.Namespace) -> tuple[str, ...]:
    out: list[str] = []
    if args.quick:
        out.append("--quick")
    for option in ("bench", "sweep", "device"):
        if getattr(args, option) is not None:
            out += [f"--{option}", getattr(args, option)]
    return tuple(out)


def cmd_run(args: argparse.Namespace) -> int:
    require_submitit()  # first: without it nothing else can be done
    request = check_request(args)
    if args.resume is not None:
        return resume(args.resume, request, partition=args.partition, time_min=args.time)
    return start(request)


def cmd_status(args: argparse.Namespace) -> int:
    return status(args.folder)


def cmd_merge(args: argparse.Namespace) -> int:
    check_output_folder("--results", args.results)
    return merge_folders(args.folders, os.path.abspath(args.results))
