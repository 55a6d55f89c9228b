"""Nothing of the user's is lost. The one write path (``results/safefiles.py``)
through links, hard links and edits; publish's site folder (a link, an empty folder, a hand
edit, an older marker, a mount point, a link as the site); what a run cleans up and which
machine names it refuses; a merge killed at any point; fleet's local cap and its status. Each
test failed on the code before the fix; each class has more cases than the issue's example."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tmpfs

from xferbench.cli import main
from xferbench.commands.publish.sitefolder import SITE_MARKER, foreign
from xferbench.errors import XferbenchError
from xferbench.results import load, lock, safefiles
from xferbench.results.backup import clean_stale
from xferbench.results.filesystem import TEMP, shown_file
from xferbench.results.sidecar import metadata_path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "results"


def refused(capsys, argv: list[str], *words: str) -> str:
    """``xferbench argv`` refused: exit 2, one line naming ``words``, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xferbench: "), err
    assert "Traceback" not in err and all(w in lines[0] for w in words), err
    return lines[0]


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: a file's bytes, a link's target, a folder as '/'."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else "/" if p.is_dir() \
            else p.read_bytes()
    return out


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def mounted(tmp_path):
    """A fresh 4 MiB tmpfs (root only: skipped where mounting is not allowed)."""
    where = tmp_path / "mnt"
    where.mkdir()
    with tmpfs(where, "4m"):
        yield where


# -- the one write path ------------------------------------------------------------------------

def test_a_write_through_a_link_changes_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "data.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to("real/data.json")  # relative, as users make them
    chain = tmp_path / "chain.json"
    chain.symlink_to(link)
    safefiles.write_json_atomic(str(chain), {"x": 1})
    assert chain.is_symlink() and link.is_symlink()
    assert json.loads(target.read_text()) == {"x": 1}
    # a link to a file not there yet: the file is made where the link says
    ahead = tmp_path / "ahead.txt"
    ahead.symlink_to(tmp_path / "real" / "new.txt")
    assert safefiles.write_text_safely(str(ahead), "made") == str(tmp_path / "real" / "new.txt")
    assert ahead.is_symlink() and (tmp_path / "real" / "new.txt").read_text() == "made"


def test_a_hard_link_stays_one_file(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("old")
    b = tmp_path / "b.txt"
    os.link(a, b)
    safefiles.write_text_safely(str(a), "new and longer")
    assert b.read_text() == "new and longer" and a.stat().st_ino == b.stat().st_ino
    safefiles.write_text_safely(str(b), "s")  # shorter: truncated, still one file
    assert a.read_text() == "s" and a.stat().st_nlink == 2


def test_a_file_changed_since_it_was_read_is_refused_and_the_edit_kept(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("x = 1\n")
    text, stamp = safefiles.read_text_stamped(str(path))
    path.write_text("x = 2  # saved in the editor meanwhile\n")
    with pytest.raises(XferbenchError, match="changed since it was read") as info:
        safefiles.write_text_safely(str(path), text.replace("1", "3"), expect=stamp)
    assert str(path) in str(info.value)
    assert path.read_text() == "x = 2  # saved in the editor meanwhile\n"
    assert not [p for p in tmp_path.iterdir() if p.name != "train.py"]  # no temporary left
    text, stamp = safefiles.read_text_stamped(str(path))  # unchanged since: written
    safefiles.write_text_safely(str(path), "x = 4\n", expect=stamp)
    assert path.read_text() == "x = 4\n"


def test_the_files_permissions_are_kept_and_a_new_file_gets_the_mode_asked(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{}")
    path.chmod(0o640)
    safefiles.write_json_atomic(str(path), {"a": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    tool = tmp_path / "python"
    safefiles.write_text_safely(str(tool), "#!/bin/sh\n", mode=0o755)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755


@pytest.mark.parametrize(("make", "words"), [
    (lambda t: (t / "d").mkdir(), "is a folder"),
    (lambda t: None, "does not exist"),  # no parent folder
    (lambda t: (t / "f").write_text("x"), "which is a file"),
])
def test_what_cannot_be_written_is_refused_before_any_work(tmp_path, make, words):
    make(tmp_path)
    path = {"is a folder": tmp_path / "d", "does not exist": tmp_path / "nope" / "x.json",
            "which is a file": tmp_path / "f" / "x.json"}[words]
    with pytest.raises(XferbenchError, match=words):
        safefiles.check_writable(str(path), what="--out")
    with pytest.raises(XferbenchError, match="is empty"):
        safefiles.check_writable(" ", what="--out")


def test_a_read_only_file_system_names_the_real_file_never_a_temporary(mounted):
    target = mounted / "benchmarks.json"
    target.write_text('{"kept": true}')
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    with pytest.raises(OSError) as info:  # still an OSError, for callers that catch those
        safefiles.write_json_atomic(str(target), {"x": 1})
    said = str(info.value)
    assert said.startswith(f"cannot write {target}: Read-only file system"), said
    assert ".tmp" not in said and json.loads(target.read_text()) == {"kept": True}
    with pytest.raises(XferbenchError, match="Read-only file system"):
        safefiles.check_writable(str(mounted / "new.json"))
    # any OSError the command line meets names the file, a temporary as its own file
    tmp = safefiles.temp_path(str(target))
    assert TEMP.fullmatch(os.path.basename(tmp)) and shown_file(tmp) == str(target)


def test_a_file_size_limit_is_named_with_the_file_and_checked_up_front(tmp_path):
    code = (
        "import resource, sys\n"
        "from xferbench.results import safefiles\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
        "try:\n"
        f"    safefiles.check_writable({str(tmp_path / 'big.txt')!r}, size=10000)\n"
        "except Exception as e:\n"
        "    print('UP FRONT', e)\n"
        "try:\n"
        f"    safefiles.write_text_safely({str(tmp_path / 'big.txt')!r}, 'x' * 10000)\n"
        "except Exception as e:\n"
        "    print('WRITE', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout
    assert f"UP FRONT {tmp_path / 'big.txt'} would be 9.8 KiB, over this shell's file size " \
           "limit (ulimit -f) of 4.0 KiB" in out
    assert f"WRITE cannot write {tmp_path / 'big.txt'}: File too large: over this shell's " \
           "file size limit (ulimit -f) of 4.0 KiB" in out
    assert not (tmp_path / "big.txt").exists() and list(tmp_path.iterdir()) == []


def test_several_files_written_as_one_change_leave_nothing_half_done(tmp_path, monkeypatch):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("old a")
    real = safefiles._staged
    calls = []

    def interrupted(*args):
        calls.append(args[0])
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C while the second file is staged
        return real(*args)

    monkeypatch.setattr(safefiles, "_staged", interrupted)
    with pytest.raises(KeyboardInterrupt):
        safefiles.write_all_safely([(str(a), "new a"), (str(b), "new b")])
    assert a.read_text() == "old a" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left


# -- publish: the site's folder ----------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A site publish built (from the golden results: small, quick)."""
    out = tmp_path_factory.mktemp("built") / "site"
    assert main(["publish", "--results", str(GOLDEN), "--out", str(out)]) == 0
    return out


@pytest.fixture
def site(built, tmp_path) -> Path:
    out = tmp_path / "site"
    shutil.copytree(built, out, symlinks=True)
    return out


def _publish(out: Path) -> list[str]:
    return ["publish", "--results", str(GOLDEN), "--out", str(out)]


@pytest.mark.parametrize(("add", "words"), [
    (lambda s: (s / "docs").symlink_to("/usr/share/doc"), "the link docs -> /usr/share/doc"),
    (lambda s: (s / "figures" / "mine.svg").symlink_to(s / "index.html"),
     "the link figures/mine.svg"),
    (lambda s: (s / "gone").symlink_to(s / "nowhere"), "the link gone"),
    (lambda s: (s / "drafts").mkdir(), "the folder drafts/, which publish did not make"),
    (lambda s: (s / "figures" / "later").mkdir(), "the folder figures/later/"),
    (lambda s: (s / "notes.md").write_text("mine"), "notes.md, which publish did not write"),
    (lambda s: (s / "asv" / "extra.json").write_text("{}"), "asv/extra.json"),
])
def test_publish_refuses_a_link_a_folder_or_a_file_the_user_added(site, capsys, add, words):
    add(site)
    before = tree(site)
    refused(capsys, _publish(site), words, "would delete it")
    assert tree(site) == before
    assert not [p for p in site.parent.iterdir() if p.name.startswith(".site-new-")]


@pytest.mark.parametrize("rel", ["style.css", "index.html", "asv/index.json"])
def test_publish_refuses_to_overwrite_a_hand_edit(site, capsys, rel):
    with open(site / rel, "a", encoding="utf-8") as fh:
        fh.write("\n/* my own change */\n")
    before = tree(site)
    refused(capsys, _publish(site), f"{rel}, changed since publish wrote it", "overwrite")
    assert tree(site) == before


def test_publish_into_a_link_replaces_its_target_and_keeps_the_link(site, tmp_path, capsys):
    www = tmp_path / "www"
    www.mkdir()
    site.rename(www / "bench")
    (www / "bench").chmod(0o2775)  # the web server's group may write there
    link = tmp_path / "served"
    link.symlink_to("www/bench")
    old = (www / "bench" / "index.html").stat().st_ino
    assert main(_publish(link)) == 0
    assert link.is_symlink() and os.readlink(link) == "www/bench"
    assert (www / "bench" / "index.html").stat().st_ino != old  # the served copy is new
    assert stat.S_IMODE((www / "bench").stat().st_mode) == 0o2775
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served", "www"]
    assert sorted(p.name for p in www.iterdir()) == ["bench"]
    assert "site: " in capsys.readouterr().out


def test_an_older_markers_folder_is_replaced_only_if_it_holds_what_publish_writes(site, capsys):
    (site / SITE_MARKER).write_text("built by xferbench publish; publish replaces this folder "
                                    "as a whole\n")  # before publish listed its files
    assert foreign(str(site)) == []
    (site / "notes.md").write_text("mine")
    (site / "figures" / "plan.txt").write_text("mine too")
    before = tree(site)
    refused(capsys, _publish(site), "notes.md, which publish did not write", "older publish")
    assert tree(site) == before
    (site / "notes.md").unlink()
    assert foreign(str(site)) == ["figures/plan.txt, which publish did not write (the folder's "
                                  "marker is an older publish's, which listed no files)"]


def test_a_folder_without_a_marker_is_refused_naming_what_it_holds(tmp_path, capsys):
    out = tmp_path / "www"
    out.mkdir()
    (out / "index.html").write_text("the user's own page")
    refused(capsys, _publish(out), "index.html, which publish did not write")
    assert (out / "index.html").read_text() == "the user's own page"


def test_a_mount_point_is_refused_before_the_build(mounted, capsys, monkeypatch):
    from xferbench.commands.publish import site

    def never(*args, **kwargs):
        raise AssertionError("asv publish ran before the refusal")

    monkeypatch.setattr(site, "run_asv_publish", never)  # said before asv publish and figures
    refused(capsys, _publish(mounted), "is a mount point", f"--out {mounted}/site")
    assert list(mounted.iterdir()) == [] and \
        not [p for p in mounted.parent.iterdir() if p.name.startswith(".mnt-new-")]


def test_a_mount_point_inside_the_site_is_refused(site, capsys):
    inner = site / "figures"
    with tmpfs(inner, "1m"):
        (inner / "theirs.txt").write_text("on another file system")
        refused(capsys, _publish(site), "the mount point figures/")
        assert (inner / "theirs.txt").read_text() == "on another file system"


def test_too_little_room_for_the_site_is_said_before_the_build(tmp_path, capsys):
    where = tmp_path / "small"
    where.mkdir()
    with tmpfs(where, "256k"):
        refused(capsys, _publish(where / "site"), "No space left on device", "free in")
        assert list(where.iterdir()) == []


def _limited(limit: int):
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    return apply


def test_publish_under_a_file_size_limit_names_the_sites_file_and_keeps_the_old_site(
        site, tmp_path):
    cmd = [sys.executable, "-m", "xferbench", *_publish(tmp_path / "new")]
    new = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         preexec_fn=_limited(64 * 1024))
    said = new.stderr.strip()
    assert new.returncode == 2 and said.count("\n") == 0 and "Traceback" not in said, said
    assert said.startswith("xferbench: cannot write ") and f" {tmp_path / 'new'}/" in said and \
        said.endswith("File too large: over this shell's file size limit (ulimit -f) of "
                      "64.0 KiB"), said
    before = tree(site)
    old = subprocess.run([sys.executable, "-m", "xferbench", *_publish(site)],
                         capture_output=True, text=True, timeout=300,
                         preexec_fn=_limited(64 * 1024))
    assert old.returncode == 2 and "would hold a file of" in old.stderr, old.stderr
    assert tree(site) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no staging folder left


# -- run: what it cleans up, and the names it takes --------------------------------------------

def test_a_run_removes_only_the_temporary_files_a_killed_xferbench_left(tmp_path):
    results = shutil.copytree(GOLDEN, tmp_path / "results")
    machine = results / "cpu-2core-vm"
    gone = dead_pid()
    drafts = results / "notes" / "drafts"
    users = [drafts / "report.2023.tmp", drafts / f"report.{gone}.tmp",  # the example
             machine / f"report.{gone}.tmp", results / f"benchmarks.json.{gone}.tmp",
             machine / f".mine.json.xferbench-{os.getpid()}-abcdef.tmp",  # alive: in use
             drafts / f".x.json.xferbench-{gone}-abcdef.tmp"]  # deeper than xferbench writes
    for path in users:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the user's")
    link = machine / f".l.json.xferbench-{gone}-abcdef.tmp"
    link.symlink_to(drafts / "report.2023.tmp")
    stale = machine / f".x.json.xferbench-{gone}-0a1b2c.tmp"
    stale.write_text("half")
    assert clean_stale(str(results)) == [f"removed {stale}"]
    assert all(p.read_text() == "the user's" for p in users) and link.is_symlink()
    assert not stale.exists()


@pytest.mark.parametrize("name", ["benchmarks.json", "machine.json", "box.json", "box.metadata",
                                  "box.tmp", "box.JSON", "run.lock", "x.xferbench-bak"])
def test_a_machine_named_like_a_file_of_the_results_folder_is_refused(tmp_path, capsys, name):
    refused(capsys, ["run", "--machine", name, "--results", str(tmp_path / "r")],
            f"--machine {name!r} is named like a file of the results folder")
    assert not (tmp_path / "r").exists()


def test_a_machine_whose_folder_is_the_users_is_refused(tmp_path, capsys):
    results = tmp_path / "results"
    (results / "notes").mkdir(parents=True)
    (results / "notes" / "todo.md").write_text("mine")
    (results / "README").write_text("mine")
    refused(capsys, ["run", "--machine", "notes", "--results", str(results)],
            "holds files but no asv machine.json")
    refused(capsys, ["run", "--machine", "README", "--results", str(results)],
            "is a file, not a machine folder")
    assert sorted(p.name for p in results.rglob("*")) == ["README", "notes", "todo.md"]


def test_a_machine_name_that_another_machine_holds_is_refused(tmp_path, capsys):
    """The same name on other hardware (the VM moved from AMD to Intel): its results would
    read as the first machine's and asv would rewrite its record; refused before anything
    runs, the folder as it was. The same hardware goes on (the check passes)."""
    from xferbench.devices import resolve_device
    from xferbench.metadata import collect
    from xferbench.results.machines import check_same_machine, machine_record

    results = tmp_path / "results"
    box = results / "box"
    box.mkdir(parents=True)
    here = machine_record("box", collect(resolve_device("cpu")))
    record = {**here, "cpu": "a CPU that is not this one", "version": 1}
    (box / "machine.json").write_text(json.dumps(record))
    before = (box / "machine.json").read_bytes()
    refused(capsys, ["run", "--device", "cpu", "--machine", "box", "--results", str(results)],
            "box/machine.json describes other hardware (cpu a CPU that is not this one; "
            "this machine: cpu ", "give this machine a name of its own")
    assert (box / "machine.json").read_bytes() == before
    assert sorted(p.name for p in results.rglob("*")) == ["box", "machine.json"]
    (box / "machine.json").write_text(json.dumps({**here, "os": "an older kernel",
                                                  "ram": "1", "version": 1}))
    check_same_machine(str(results), "box", collect(resolve_device("cpu")))  # no refusal
    # a --device cpu run on a GPU machine names no GPU: the same machine as its GPU runs
    from dataclasses import replace

    cpu_run = collect(resolve_device("cpu"))
    (box / "machine.json").write_text(json.dumps({**here, "cpu": here["cpu"] + "; GPU H200"}))
    check_same_machine(str(results), "box", cpu_run)
    with pytest.raises(XferbenchError, match=r"describes other hardware \(gpu H200; this "
                                             r"machine: gpu H100\)"):
        check_same_machine(str(results), "box", replace(cpu_run, gpu_name="H100"))


def test_the_lock_leaves_no_file_behind_and_asking_makes_none(tmp_path):
    results = tmp_path / "results"
    assert not lock.lock_is_held(str(results / "nope")) and not (results / "nope").exists()
    with lock.results_lock(str(results)):
        assert lock.lock_is_held(str(results))
        with pytest.raises(XferbenchError, match="another xferbench run"):
            with lock.results_lock(str(results)):
                pass
    assert list(results.iterdir()) == [] and not lock.lock_is_held(str(results))
    with lock.results_lock(str(results)):  # and it is taken again
        pass


# -- a merge killed at any point ---------------------------------------------------------------

KILL_AT = """\
import os, signal, sys
from xferbench.results import safefiles
step, at, how = [0], int(sys.argv[1]), sys.argv[2]
if how == "staging":
    real_staged = safefiles._staged
    def staged(*a):
        step[0] += 1
        if step[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_staged(*a)
    safefiles._staged = staged
else:  # between the renames: SIGKILL cannot be held back, SIGTERM is until they are done
    real_replace = os.replace
    def replace(a, b):
        real_replace(a, b)
        step[0] += 1
        if step[0] == at:
            os.kill(os.getpid(), signal.SIGKILL if how == "kill" else signal.SIGTERM)
    os.replace = replace
from xferbench.cli import main
sys.exit(main(["fleet", "merge", sys.argv[3], "--results", sys.argv[4]]))
"""


def _whole(dest: Path) -> None:
    """Every results file has its sidecar, and the folder its benchmarks.json."""
    files = [p for p in dest.glob("*/*.json") if p.name != "machine.json"]
    assert all(Path(metadata_path(str(p))).exists() for p in files), sorted(dest.rglob("*"))
    assert not files or (dest / "benchmarks.json").exists()


@pytest.mark.parametrize(("how", "at"), [("staging", 2), ("staging", 5), ("kill", 1),
                                         ("kill", 2), ("kill", 3), ("kill", 4), ("term", 1)])
def test_a_merge_killed_at_any_point_leaves_every_results_file_with_its_sidecar(
        tmp_path, how, at):
    dest = tmp_path / "results"
    killed = subprocess.run([sys.executable, "-c", KILL_AT, str(at), how, str(GOLDEN),
                             str(dest)], capture_output=True, text=True, timeout=120)
    assert killed.returncode < 0, killed.stdout + killed.stderr  # it died of the signal
    _whole(dest)
    if how == "term":  # held back until every file was in place, then it stopped
        assert len(load(str(dest))) == len(load(str(GOLDEN)))
    again = subprocess.run([sys.executable, "-m", "xferbench", "fleet", "merge", str(GOLDEN),
                            "--results", str(dest)], capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    _whole(dest)
    assert not [p for p in dest.rglob("*") if p.name.endswith(".tmp") or "lock" in p.name]
    assert sorted((r.key, r.value) for r in load(str(dest))) == \
        sorted((r.key, r.value) for r in load(str(GOLDEN)))


# -- fleet: the local cap and the status -------------------------------------------------------

FAKE_RUN = """#!/bin/sh
# stands in for the node's interpreter: notes when it starts and ends, then fails
echo "start $(date +%s.%N)" >> "{log}"
sleep 0.6
echo "end $(date +%s.%N)" >> "{log}"
exit 1
"""


def test_fleet_local_runs_at_most_one_task_per_core_and_says_so(tmp_path):
    pytest.importorskip("submitit")
    if not shutil.which("taskset"):
        pytest.skip("taskset is not here to give the run one core")
    log = tmp_path / "starts.log"
    fake = tmp_path / "python"
    fake.write_text(FAKE_RUN.format(log=log))
    fake.chmod(0o755)
    job = tmp_path / "job"
    proc = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", "xferbench", "fleet", "run",
         "--executor", "local", "--nodes", "3", "--python", str(fake), "--folder", str(job),
         "--results", str(tmp_path / "results"), "--poll", "0.2"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # every task failed: exit 3
    assert "3 local tasks on this machine's 1 core: at most 1 at a time, the others queued " \
           "until one finishes" in proc.stdout
    events = [line.split() for line in log.read_text().splitlines()]
    assert [e[0] for e in events] == ["start", "end"] * 3  # one after another, never two
    status = subprocess.run([sys.executable, "-m", "xferbench", "fleet", "status", str(job)],
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 3 and "3 tasks did not finish" in status.stdout


def test_fleet_status_exits_0_only_when_no_task_failed(tmp_path, capsys):
    from test_fleet import fake_job

    from xferbench.commands.fleet import job as fleetjob
    from xferbench.results.merging import FINISHED, write_marker

    folder = fake_job(tmp_path)
    assert main(["fleet", "status", str(folder)]) == 3
    assert "1 task did not finish" in capsys.readouterr().out
    plan = fleetjob.load_plan(str(folder))
    write_marker(str(folder / "stage" / "999999991-n1"), FINISHED,
                 {"task": 1, "node": "n1", "machine": "cpu-2core-vm",
                  "node_key": fleetjob.node_key(plan, 1)})
    assert main(["fleet", "status", str(folder)]) == 0
    assert "did not finish" not in capsys.readouterr().out


def test_the_marker_lists_every_file_with_its_digest(built):
    lines = (built / SITE_MARKER).read_text().splitlines()
    assert all(len(ln.split(" ", 2)[1]) == 64 for ln in lines[1:]) and \
        "index.html" in {ln.split(" ", 2)[2] for ln in lines[1:]}
    assert foreign(str(built)) == []
