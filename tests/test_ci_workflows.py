"""The workflows users copy (docs/ci/*.yml), as shipped and with their commented triggers
enabled: actionlint passes on each (with shellcheck on their scripts); each job asks for the
least permissions it needs, no secret and no write access reach a self-hosted runner, a fork's
pull request reaches it only through a maintainer's label, no workflow checks out a pull
request's code under pull_request_target, and every action is pinned by a commit. The
xferbench commands of their run: steps are parsed by the CLI's own parser, and the
comparisons and the merge run on fixture results as the jobs run them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import committed_results
from suitechange import write_change
from test_readme import command_problem

from xferbench.cli import main

REPO = Path(__file__).resolve().parents[1]
CI = REPO / "docs" / "ci"
WORKFLOWS = sorted(CI.glob("*.yml"))
ACTIONLINT_CONFIG = CI / "actionlint.yaml"

#: The actions the workflows use, each pinned to the commit its release tag names (the tag
#: follows in a comment). A new pin is the commit the tag points to, looked up, never typed.
PINS = {
    "actions/checkout": ("11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2"),
    "actions/upload-artifact": ("ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "actions/download-artifact": ("fa0a91b85d4f404e444e00e005971372dc801d16", "v4.1.8"),
    "actions/upload-pages-artifact": ("56afc609e74202658d3ffba0e8f6dda462b719fa", "v3.0.1"),
    "actions/deploy-pages": ("d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e", "v4.0.5"),
}
#: Each job's permissions, the least it needs; the workflow itself grants none.
PERMISSIONS = {
    ("pr.yml", "measure"): {"contents": "read"},
    ("pr-comment.yml", "comment"): {"actions": "read", "pull-requests": "write"},
    ("nightly.yml", "measure"): {"contents": "read"},
    ("nightly.yml", "keep"): {"contents": "write"},
    ("publish.yml", "build"): {"contents": "read"},
    ("publish.yml", "deploy"): {"pages": "write", "id-token": "write"},
}
#: The triggers each workflow's commented lines add, beside workflow_dispatch.
ENABLED = {"pr.yml": "pull_request", "pr-comment.yml": "workflow_run",
           "nightly.yml": "schedule", "publish.yml": "workflow_run"}
#: The label that lets a fork's pull request reach the GPU runner.
LABEL = "run-xferbench"


def enabled(text: str) -> str:
    """``text`` with the commented lines of its ``on:`` block uncommented: the workflow as a
    user turns its triggers on (that block holds commented YAML only)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("on:"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside:
            line = re.sub(r"^(\s*)# ", r"\1", line)
        out.append(line)
    return "\n".join(out) + "\n"


def load(path: Path, enable: bool = False) -> dict:
    text = path.read_text(encoding="utf-8")
    doc = yaml.safe_load(enabled(text) if enable else text)
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def variants() -> list[tuple[str, dict]]:
    return [(f"{p.name}{' (enabled)' if on else ''}", load(p, on))
            for p in WORKFLOWS for on in (False, True)]


def self_hosted(job: dict) -> bool:
    runs_on = job.get("runs-on")
    return "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])


def permission_problems(name: str, doc: dict) -> list[str]:
    """Where a workflow grants more than its jobs' least (PERMISSIONS), or lets a secret or
    write access reach a self-hosted runner."""
    file = name.split(" ")[0]
    out = [] if doc.get("permissions") == {} else [f"{name}: grants permissions to every job"]
    for job_name, job in doc["jobs"].items():
        want = PERMISSIONS.get((file, job_name))
        if job.get("permissions") != want:
            out.append(f"{name}: {job_name} asks for {job.get('permissions')}, not {want}")
        if self_hosted(job) and (
                "secrets." in yaml.safe_dump(job)
                or "write" in (job.get("permissions") or {}).values()):
            out.append(f"{name}: {job_name} runs on a self-hosted runner with a secret or "
                       "write access")
    return out


def target_checkout_problems(name: str, doc: dict) -> list[str]:
    """A checkout of the pull request's code (its head, its merge ref) in a workflow that
    pull_request_target runs with the base repository's token and secrets."""
    if "pull_request_target" not in (doc["on"] or {}):
        return []
    return [f"{name}: {job_name} checks out {step['with']['ref']} under pull_request_target"
            for job_name, job in doc["jobs"].items() for step in job.get("steps", [])
            if str(step.get("uses", "")).startswith("actions/checkout@")
            and re.search(r"head|refs/pull|merge", str((step.get("with") or {}).get("ref")))]


def fork_gate_problems(name: str, doc: dict) -> list[str]:
    """A self-hosted job that a pull request triggers without the gate: this repository's
    branches, or a fork's pull request only as the maintainer's label is added."""
    if "pull_request" not in (doc["on"] or {}):
        return []
    gate = ("github.event.pull_request.head.repo.full_name == github.repository",
            "github.event.action == 'labeled'", f"github.event.label.name == '{LABEL}'")
    return [f"{name}: {job_name} runs a fork's pull request without the label"
            for job_name, job in doc["jobs"].items()
            if self_hosted(job) and not all(part in str(job.get("if", "")) for part in gate)]


def pin_problems(path: Path) -> list[str]:
    """Every ``uses:`` that is not an action of PINS at its pinned commit, its tag after it."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.search(r"uses:\s*(\S+?)@(\S+)\s*(?:#\s*(\S+))?\s*$", line)
        if m and PINS.get(m.group(1)) != (m.group(2), m.group(3)):
            out.append(f"{path.name}:{n}: {m.group(1)}@{m.group(2)} # {m.group(3)}")
    return out


def actionlint() -> str | None:
    """The actionlint binary: the test extra's (beside this interpreter), or one on PATH."""
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.exists() else shutil.which("actionlint")


def test_every_workflow_has_its_triggers_and_a_manual_one():
    assert sorted(p.name for p in WORKFLOWS) == sorted(ENABLED)
    for path in WORKFLOWS:
        assert list(load(path)["on"]) == ["workflow_dispatch"]
        assert sorted(load(path, enable=True)["on"]) == sorted(
            ["workflow_dispatch", ENABLED[path.name]])


def test_actionlint_passes_on_every_workflow_as_shipped_and_enabled(tmp_path):
    binary = actionlint()
    if binary is None:
        pytest.skip("actionlint is not installed (pip install '.[test]' installs it)")
    for path in WORKFLOWS:
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        (tmp_path / f"enabled-{path.name}").write_text(
            enabled(path.read_text(encoding="utf-8")), encoding="utf-8")
    # shellcheck beside this interpreter checks the run: scripts too
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    proc = subprocess.run([binary, "-no-color", "-config-file", str(ACTIONLINT_CONFIG),
                           *sorted(str(p) for p in tmp_path.glob("*.yml"))],
                          capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")


def test_each_job_asks_for_the_least_permissions_it_needs():
    assert [p for name, doc in variants() for p in permission_problems(name, doc)] == []


def test_no_workflow_checks_out_a_pull_request_under_pull_request_target():
    assert [p for name, doc in variants() for p in target_checkout_problems(name, doc)] == []
    assert all("pull_request_target" not in p.read_text(encoding="utf-8") for p in WORKFLOWS)


def test_a_fork_s_pull_request_reaches_the_gpu_runner_only_through_the_label():
    checked = [name for name, doc in variants() if "pull_request" in (doc["on"] or {})]
    assert checked == ["pr.yml (enabled)"]
    assert [p for name, doc in variants() for p in fork_gate_problems(name, doc)] == []


def test_every_action_is_pinned_by_its_commit():
    assert [p for path in WORKFLOWS for p in pin_problems(path)] == []


def test_planted_problems_are_found(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on:\n  pull_request_target:\n  # pull_request:\npermissions: write-all\njobs:\n"
        "  measure:\n    runs-on: [self-hosted, gpu]\n    permissions: {contents: write}\n"
        "    env: {T: '${{ secrets.T }}'}\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "        with: {ref: '${{ github.event.pull_request.head.sha }}'}\n")
    doc, on = load(bad), load(bad, enable=True)
    assert permission_problems("bad.yml", doc) == [
        "bad.yml: grants permissions to every job",
        "bad.yml: measure asks for {'contents': 'write'}, not None",
        "bad.yml: measure runs on a self-hosted runner with a secret or write access"]
    assert target_checkout_problems("bad.yml", doc) == [
        "bad.yml: measure checks out ${{ github.event.pull_request.head.sha }} under "
        "pull_request_target"]
    assert fork_gate_problems("bad.yml", doc) == []
    assert fork_gate_problems("bad.yml", on) == [
        "bad.yml: measure runs a fork's pull request without the label"]
    assert pin_problems(bad) == ["bad.yml:11: actions/checkout@v4 # None"]


def commands(path: Path, job: str, variables: dict[str, str]) -> list[list[str]]:
    """The xferbench commands of ``job``'s run: steps in order, each as its arguments after
    the program, with ``variables`` (and the workflow's env) put in and what is redirected
    or chained after it cut off."""
    doc = load(path)
    values = {**doc.get("env", {}), **variables}
    out = []
    for step in doc["jobs"][job]["steps"]:
        for line in str(step.get("run", "")).splitlines():
            if not line.strip().split(" ", 1)[0].strip('"').endswith("xferbench"):
                continue
            line = re.sub(r"\$\{?([A-Za-z_]\w*)\}?",
                          lambda m: values.get(m.group(1), m.group(0)), line)
            args = shlex.split(line)
            cut = next((i for i, a in enumerate(args) if a in (">", "||", "|", "&&")),
                       len(args))
            assert not any("$" in a for a in args[:cut]), f"{path.name}: {line}: a " \
                "variable SHELL does not give"
            out.append(args[1:cut])
    return out


#: What a step's shell gives each variable the commands use.
SHELL = {"RUNNER_TEMP": "/runner/temp", "machine": "gpu-runner", "side": "head",
         "build": "release", "base": "d61e069d", "head": "5eed0c0f", "release": "2.13.0",
         "nightly": "2.14.1"}


def test_every_xferbench_command_of_the_workflows_parses():
    found = {(p.name, job): commands(p, job, SHELL)
             for p in WORKFLOWS for job in load(p)["jobs"]}
    verbs = {key: [args[0] for args in cmds] for key, cmds in found.items() if cmds}
    assert verbs == {("pr.yml", "measure"): ["run", "compare"],
                     ("nightly.yml", "measure"): ["run", "compare"],
                     ("nightly.yml", "keep"): ["fleet"],
                     ("publish.yml", "build"): ["publish"]}
    assert [f"{key}: {args}: {problem}" for key, cmds in found.items() for args in cmds
            if (problem := command_problem(shlex.join(["xferbench", *args])))] == []


def test_the_pull_request_job_fails_on_the_change_a_repeat_confirms(tmp_path, capsys):
    base, head, slower = write_change(committed_results(), tmp_path / "results")
    shell = {**SHELL, "RUNNER_TEMP": str(tmp_path), "MACHINE": "cpu-2core-vm",
             "base": base, "head": head}
    compare = commands(CI / "pr.yml", "measure", shell)[-1]
    assert main(compare) == 1
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if line.startswith("| `"))
    assert first.startswith(f"| `{slower.split('.', 1)[1]}` |")
    assert first.endswith("| worse, confirmed (cpu-2core-vm-rerun) |")


def test_the_nightly_job_compares_the_nightly_with_the_release(tmp_path, capsys):
    (tmp_path / "results").symlink_to(committed_results(), target_is_directory=True)
    shell = {**SHELL, "RUNNER_TEMP": str(tmp_path), "MACHINE": "cpu-2core-vm"}
    compare = commands(CI / "nightly.yml", "measure", shell)[-1]
    assert main(compare) == 1  # the committed data holds confirmed regressions
    assert "### xferbench compare: regression (12 worse" in capsys.readouterr().out


def test_the_nightly_job_files_its_results_where_the_page_reads_them(tmp_path, monkeypatch):
    write_change(committed_results(), tmp_path / "new" / "results")
    (tmp_path / "store").mkdir()
    monkeypatch.chdir(tmp_path)
    merge = commands(CI / "nightly.yml", "keep", SHELL)[0]
    assert main(merge) == 0
    filed = sorted(p.name for p in (tmp_path / "store" / "results").glob("*/*.json"))
    assert len([n for n in filed if n != "machine.json"]) == 4
    build = commands(CI / "publish.yml", "build", SHELL)[0]
    assert build[build.index("--results") + 1] == "results"  # run in store/: what keep filed


def test_a_detached_checkout_of_a_commit_is_runnable(tmp_path):
    """actions/checkout leaves a pull request's code (or a commit it was given) detached,
    with no local branch: asv, which resolves each configured branch before it runs, is
    given HEAD where the configured main is not there."""
    from asv import config, repo

    from xferbench.results.repo import write_asv_config
    from xferbench.results.suite import CLONE, Suite

    clone = tmp_path / "clone"
    shutil.copytree(REPO / "benchmarks", clone / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "asv.conf.json", clone / "asv.conf.json")
    git = ["git", "-c", "user.name=x", "-c", "user.email=x@x", "-C", str(clone)]
    for args in (["init", "-q", "-b", "feature"], ["add", "-A"], ["commit", "-q", "-m", "x"],
                 ["checkout", "-q", "--detach"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    path = write_asv_config(Suite(str(clone), CLONE), str(tmp_path / "r"), str(tmp_path))
    conf = config.Config.load(path)
    assert conf.branches == ["HEAD"]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert repo.get_repo(conf).get_hash_from_name(conf.branches[0]) == head.strip()
