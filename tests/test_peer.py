"""Peer copies between devices: the practice (practices/peer.py), its asv class
(benchmarks/bench_peer.py), ``xferbench run --devices``, and the emulated device with two
devices and peer access per pair (tests/emu).

The emulated parts run in fresh processes with XFERBENCH_EMU_DEVICES=2 (this process never
loads emu), and are skipped, saying why, where emu cannot be built.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import emu
import pytest
from conftest import slow_fixture

from xferbench.cli import main
from xferbench.commands.run import numa
from xferbench.commands.run.devices import parse_devices
from xferbench.devices import Capabilities
from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata
from xferbench.practices.contention import STREAM_PARAM
from xferbench.practices.peer import PeerCase, peer_skip_reason
from xferbench.results import load
from xferbench.telemetry import numa_cpus

REPO = Path(__file__).resolve().parents[1]
AUTOLOAD = str(REPO / "tests" / "emu" / "autoload")
TWO = Capabilities("emu:0", True, True, True, emulated=True, stream_hold=True, devices=2)
ONE = Capabilities("cuda:0", True, True, True, stream_hold=True)
CPU = Capabilities("cpu", False, False, False, reason="the CPU has none")


@pytest.fixture(scope="module")
def two_emu() -> dict[str, str]:
    """The environment of a process tree on two emulated devices, 1->0 without peer access."""
    try:
        emu.build()  # not load(): this process stays off the emulated device
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    return {"XFERBENCH_EMU": "1", "PYTHONPATH": AUTOLOAD, "ASV_PYTHONPATH": AUTOLOAD,
            "XFERBENCH_EMU_DEVICES": "2", "XFERBENCH_EMU_NO_PEER": "1>0",
            "XFERBENCH_PROBE": "", "XFERBENCH_SWEEP": "", "XFERBENCH_QUICK": "",
            "XFERBENCH_DEVICE": ""}


def _last_json(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- the practice's cases and reasons (no device)


def test_a_peer_case_refuses_what_is_not_one():
    with pytest.raises(XferbenchError, match="layout 'diagonal' is not one of"):
        PeerCase(0, 1, "diagonal", 4096)
    with pytest.raises(XferbenchError, match="is not a size"):
        PeerCase(0, 1, "contiguous", 0)
    assert PeerCase(0, 1, "strided", 4096).label == "peer 0->1 strided 4KiB"


@pytest.mark.parametrize(("caps", "case", "reason"), [
    (CPU, PeerCase(0, 1, "contiguous", 4096), "need two accelerators"),
    (ONE, PeerCase(0, 1, "contiguous", 4096), "peer copies need two devices"),
    (TWO, PeerCase(0, 0, "contiguous", 4096), "a copy within one device is d2d"),
    (TWO, PeerCase(0, 2, "contiguous", 4096), "device 2 is not here"),
    (TWO, PeerCase(0, 1, "strided", 100), "multiple of 64 bytes"),
    (TWO, PeerCase(1, 0, "strided", 4096), None),
])
def test_each_skipped_pair_says_why(caps, case, reason):
    why = peer_skip_reason(case, caps)
    assert (why is None) if reason is None else (reason in why)


# --- --devices: bad input is one sentence


@pytest.mark.parametrize(("text", "message"), [
    ("", "names an empty device"),
    ("0,,1", "names an empty device"),
    ("0,x", "'x' is not a device index"),
    ("1,0,1", "names device 1 twice"),
])
def test_a_bad_devices_list_is_one_sentence(text, message):
    with pytest.raises(XferbenchError, match=message):
        parse_devices(text)


def test_a_devices_list_keeps_its_order():
    assert parse_devices(None) is None
    assert parse_devices(" ALL ") == ("all",)
    assert parse_devices("2, 0") == ("2", "0")


def test_devices_all_without_an_accelerator_exits_2_writing_nothing(run_python, tmp_path):
    results = tmp_path / "results"
    proc = run_python("-m", "xferbench", "run", "--devices", "all", "--results", str(results),
                      env={"XFERBENCH_EMU": "0"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--devices all needs an accelerator" in lines[0]
    assert not results.exists()


# --- --numa auto


@dataclass(frozen=True)
class _Plan:
    """What placed() reads of a RunPlan."""

    device: str
    meta: MachineMetadata


def test_numa_auto_without_numa_information_says_so_and_goes_on():
    plan, out = _Plan("emu:0", MachineMetadata()), io.StringIO()
    with numa.placed(plan, "auto", out) as where:  # type: ignore[arg-type]
        assert where is plan
    assert ("--numa auto could not place the process for emu:0: the device has no PCI bus id"
            in out.getvalue())
    assert numa_cpus("ffff:ff:1f.7")[1] is None  # no such device in sysfs


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_numa_auto_pins_the_run_to_the_nodes_cpus_and_gives_them_back(monkeypatch):
    before = os.sched_getaffinity(0)
    cpu = min(before)
    monkeypatch.setattr(numa, "numa_cpus", lambda bus_id: (3, [cpu], ""))
    plan, out = _Plan("cuda:0", MachineMetadata(pci_bus_id="0000:41:00.0")), io.StringIO()
    with numa.placed(plan, "auto", out) as where:  # type: ignore[arg-type]
        assert os.sched_getaffinity(0) == {cpu}
        assert where.meta.cpu_affinity == str(cpu)  # the series' metadata says where it ran
    assert os.sched_getaffinity(0) == before
    assert f"cuda:0 is on NUMA node 3; the benchmark processes run on its CPUs {cpu}" in \
        out.getvalue()
    assert numa.ranges([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"


# --- bench_peer at discovery (the probe only, no torch)


def _describe(run_python, probe: Capabilities) -> dict:
    env = {"XFERBENCH_PROBE": json.dumps({"device": probe.device,
                                          "capabilities": probe.to_dict()}),
           "XFERBENCH_SWEEP": "default", "XFERBENCH_QUICK": ""}
    [peer] = _last_json(run_python("-m", "benchmarks._asv", "bench_peer", env=env))
    return peer


def test_on_one_device_the_peer_class_is_skipped_at_discovery_with_its_reason(run_python):
    peer = _describe(run_python, ONE)
    assert peer["class"] == "Peer" and peer["measured"] == 0 and peer["estimate_s"] == 0
    reasons = {row[-1] for rows in peer["skips"].values() for row in rows}
    assert reasons == {"peer copies need two devices: cuda:0 is the only cuda device here"}


def test_on_two_devices_each_device_copies_to_the_other_and_times_its_first_copy_once(
        run_python):
    peer = _describe(run_python, TWO)
    assert peer["measured"] == 2 * 5  # to 1: two layouts, five default sizes
    assert peer["runs"]["track_device_s"][0] == ["1", "contiguous", "4KiB"]
    assert peer["runs"]["track_first_copy_s"] == [["1", "contiguous", "4KiB"]]
    assert peer["runs"]["track_peer_access"] == [["1", "contiguous", "4KiB"]]


# --- the emulated device: two devices, peer access per pair


def test_a_bad_no_peer_setting_is_one_clear_error(monkeypatch):
    for value in ("0>0", "0-1", "0>9", "0>1,x"):
        monkeypatch.setenv("XFERBENCH_EMU_NO_PEER", value)
        with pytest.raises(ValueError, match=f"XFERBENCH_EMU_NO_PEER='{value}' is not a list"):
            emu._check_environment()


BACKEND = """
import sys, json, time
sys.path.insert(0, "tests")
import emu, torch
emu.load()
ask = torch.emu.can_device_access_peer
access = [ask(0, 1), ask(1, 0), ask(0, 0)]
src = torch.arange(1 << 20, dtype=torch.int32, device="emu:0")
dst = torch.empty_like(src, device="emu:1")
t0 = time.perf_counter(); dst.copy_(src); first = time.perf_counter() - t0
torch.accelerator.synchronize(0); torch.accelerator.synchronize(1)
t0 = time.perf_counter(); dst.copy_(src); second = time.perf_counter() - t0
torch.accelerator.synchronize(0); torch.accelerator.synchronize(1)
dst.zero_(); torch.accelerator.synchronize(1)
with emu.held(torch.accelerator.current_stream(0)):  # the source's stream runs the copy
    dst.copy_(src)  # returns, queued: the held stream cannot have run it
    pending = [emu.pending(0), emu.pending(1)]
landed = torch.equal(dst.cpu(), src.cpu())  # dst's stream waits for the copy
back = torch.empty_like(src, device="emu:0")
back.copy_(dst + 1); staged = torch.equal(back.cpu(), src.cpu() + 1)
emu.set_peer_access(1, 0, True)
print(json.dumps({"access": access, "after": ask(1, 0), "first": first, "second": second,
                  "pending": pending, "landed": landed, "staged": staged}))
"""


def test_emu_copies_between_devices_on_the_source_stream_behind_a_two_way_barrier(
        run_python, two_emu):
    seen = _last_json(run_python("-c", BACKEND, env=two_emu))
    assert seen["access"] == [True, False, False] and seen["after"] is True
    assert seen["first"] >= 0.002 > seen["second"]  # peer access is enabled by the first copy
    assert seen["pending"][0] >= 1 and seen["pending"][1] >= 1  # the copy; dst's wait for it
    assert seen["landed"] and seen["staged"]  # a pair without peer access still copies


PRACTICE = """
import sys, json
from xferbench.devices import capabilities, resolve_device
from xferbench.errors import XferbenchError
from xferbench.practices.peer import PeerCase, build_peer, first_copy_s, run_peer
from xferbench.spec import DEFAULT_SPEC
caps = capabilities(resolve_device("emu:0"))
out = {"devices": caps.devices}
for src, dst in ((0, 1), (1, 0)):
    for layout in ("contiguous", "strided"):
        r = run_peer(PeerCase(src, dst, layout, 1 << 20), "emu", caps,
                     DEFAULT_SPEC.for_quick(), first=layout == "contiguous")
        m = r.measurement
        out[f"{src}->{dst} {layout}"] = [r.peer_access, r.first_copy_s, len(m.device_s),
                                         m.extra.get("device_clock")]
try:
    first_copy_s(build_peer(PeerCase(0, 1, "contiguous", 4096), "emu", caps))
    out["again"] = ""
except XferbenchError as exc:
    out["again"] = str(exc)
print(json.dumps(out))
"""


def test_the_peer_practice_verifies_every_pair_and_times_each_first_copy_apart(
        run_python, two_emu):
    seen = _last_json(run_python("-c", PRACTICE, env=two_emu, timeout=300))
    assert seen["devices"] == 2
    access, first, samples, clock = seen["0->1 contiguous"]
    assert access is True and first >= 0.002 and samples >= 3 and clock.startswith("held")
    access, first, samples, _ = seen["1->0 contiguous"]
    assert access is False and first is not None and samples >= 3  # no enabling to pay
    for name in ("0->1 strided", "1->0 strided"):
        assert seen[name][1] is None and seen[name][2] >= 3
    assert "already copied in this process" in seen["again"]


LOADED = """
import json, os, sys
sys.path.insert(0, "tests")
import emu, torch
from xferbench.devices import capabilities, resolve_device
from xferbench.stream_hold import calibrate_spin
dev = resolve_device("emu:0")
os.environ["XFERBENCH_PROBE"] = json.dumps({"device": dev.name,
                                            "capabilities": capabilities(dev).to_dict()})
calibrate_spin(dev)
emu.set_host_stall(1, 0.25)  # from now on every copy is queued 0.25 s late: a loaded host
import benchmarks.bench_peer as bp
cache = bp.Peer().setup_cache()
print(json.dumps({" ".join(map(str, k)): v for k, v in cache.items()}))
"""


@pytest.mark.slow
def test_a_peer_copy_that_cannot_be_held_on_a_loaded_host_is_skipped_not_failed(
        run_python, two_emu):
    """On a host that queues every copy late, no hold covers one call: the measurement falls
    back to the completion clock as its message says, and Peer's device time, which that
    clock is not, is skipped with the reason; the pair's first copy and peer access keep
    their values, and nothing is a failure (the run's exit 3 is for the suite's faults)."""
    cache = _last_json(run_python("-c", LOADED, timeout=300, env={
        **two_emu, "XFERBENCH_SWEEP": "smoke", "XFERBENCH_QUICK": "1"}))
    assert cache and not any("error" in e for e in cache.values()), cache
    first = cache["1 contiguous 1MiB"]
    assert first["skips"]["track_device_s"].startswith(
        "no device time here: one call could not be held"), first
    assert first["values"]["track_first_copy_s"] > 0
    assert first["values"]["track_peer_access"] == 1.0
    assert "track_device_s" not in first["values"]


@pytest.mark.slow
def test_a_run_on_a_loaded_host_skips_the_device_time_it_cannot_hold_and_fails_nothing(
        two_emu, tmp_path):
    """Through asv itself: a method with no device time (every copy queued 0.25 s late) is a
    skip in the results file, with its reason in the sidecar, and the run exits 0; asv skips
    a track method for its own SkipNotImplemented alone, any other error is a failure."""
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "xferbench", "run", "--quick", "--sweep", "smoke", "--device",
         "emu:0", "--bench", "Peer", "--results", str(results)],
        cwd=REPO, env={**os.environ, **two_emu, "XFERBENCH_EMU_HOST_STALL": "1,0.25"},
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0 and ", 0 failed" in proc.stdout, proc.stdout + proc.stderr
    rows = [r for r in load(str(results)) if r.benchmark == "bench_peer.Peer.track_device_s"
            and r.param_dict["to"] == "1"]
    assert rows and all(r.value is not None and not r.ok for r in rows)  # skipped, not failed
    (sidecar,) = results.glob("*/*.metadata")
    reasons = json.loads(sidecar.read_text())["outcomes"]["bench_peer.Peer.track_device_s"]
    assert {row["params"]["layout"] for row in reasons
            if row["reason"].startswith("no device time here")} == {"contiguous", "strided"}


# --- xferbench run --devices all on two emulated devices


@pytest.fixture(scope="module")
@slow_fixture
def peer_run(two_emu, tmp_path_factory):
    results = tmp_path_factory.mktemp("peer-run") / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "xferbench", "run", "--quick", "--sweep", "smoke",
         "--devices", "all", "--bench", "Peer|Contention", "--results", str(results)],
        cwd=REPO, env={**os.environ, **two_emu}, capture_output=True, text=True,
        timeout=600, check=False)
    return results, proc


@pytest.mark.slow
def test_devices_all_gives_one_series_per_device_with_its_row_of_the_matrix(peer_run):
    results, proc = peer_run
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "device 1 of 2: emu:0" in proc.stdout and "device 2 of 2: emu:1" in proc.stdout
    files = sorted(p for p in results.glob("*/*.json") if p.name != "machine.json")
    devices = sorted(json.loads(p.read_text())["params"]["device"] for p in files)
    assert devices == ["emu:0", "emu:1"]  # one series (results file) per device
    rows = {(Path(r.path).name, r.benchmark.rsplit(".", 1)[-1], r.param_dict["to"],
             r.param_dict["layout"]): r for r in load(str(results))
            if r.benchmark.startswith("bench_peer.Peer.")}
    by_device = {json.loads(p.read_text())["params"]["device"]: p.name for p in files}
    for src, dst, access in (("emu:0", "1", 1.0), ("emu:1", "0", 0.0)):
        name = by_device[src]
        for layout in ("contiguous", "strided"):
            assert rows[(name, "track_device_s", dst, layout)].ok
        assert rows[(name, "track_first_copy_s", dst, "contiguous")].ok
        assert rows[(name, "track_peer_access", dst, "contiguous")].value == access


def _series(results: Path) -> dict[str, str]:
    """device -> its results file's name."""
    files = [p for p in results.glob("*/*.json") if p.name != "machine.json"]
    return {json.loads(p.read_text())["params"]["device"]: p.name for p in files}


@pytest.mark.slow
def test_contention_runs_every_chosen_device_at_once_in_the_first_series(peer_run):
    results, proc = peer_run
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    files = _series(results)
    rows = [r for r in load(str(results)) if r.benchmark.startswith("bench_contention.")]
    for mode in ("host_to_all", "all_to_host"):
        for stream in ("0", "1"):
            got = {r.benchmark.rsplit(".", 1)[-1]: r for r in rows
                   if Path(r.path).name == files["emu:0"] and r.param_dict["mode"] == mode
                   and r.param_dict[STREAM_PARAM] == stream}
            assert got["track_alone_s"].ok and got["track_together_s"].ok, (mode, stream)
        assert not any(r.ok for r in rows if Path(r.path).name == files["emu:1"]
                       and r.param_dict["mode"] == mode)  # measured once, in emu:0's series
    for device in ("emu:0", "emu:1"):  # each device both ways at once
        both = [r for r in rows if Path(r.path).name == files[device]
                and r.param_dict["mode"] == "bidirectional" and r.ok]
        assert {r.param_dict[STREAM_PARAM] for r in both} == {"h2d", "d2h"}


@pytest.mark.slow
def test_the_page_has_a_peer_heat_map_with_every_cell_and_marks_the_pair_without_access(
        peer_run, tmp_path, capsys):
    results, proc = peer_run
    assert proc.returncode == 0
    site = tmp_path / "site"
    assert main(["publish", "--results", str(results), "--out", str(site)]) == 0
    maps = sorted((site / "figures").glob("peer-*.svg"))
    assert [p.name.rsplit("-", 1)[-1] for p in maps] == ["contiguous.svg", "strided.svg"]
    svg = maps[0].read_text()
    assert svg.count("no peer") == 1 and svg.count("d2d") == 2  # 1->0 marked; the diagonal
    page = (site / "index.html").read_text()
    section = page[page.index('<section id="peer">'):]
    section = section[:section.index("</section>")]
    assert section.count('class="no-peer"') == 2  # 1->0, contiguous and strided
    assert "n/a:" not in section  # every cell has its number
    assert "--device emu:1" in section and "no peer access: can_device_access_peer" in section
    contention = page[page.index('<section id="contention">'):]
    contention = contention[:contention.index("</section>")]
    # host-to-all and all-to-host over both devices (emu:0's series), each device both ways
    assert contention.count('class="sum"') == 4
    assert f"Contention.track_together_s --params mode=host_to_all,{STREAM_PARAM}=1" \
        in contention


@pytest.mark.slow
def test_cite_reads_a_peer_cell_by_its_source_device_and_says_it_had_no_peer_access(
        peer_run, capsys):
    results, _ = peer_run

    def cite(to: str, device: str) -> int:
        return main(["cite", "Peer.track_device_s", "--params",
                     f"to={to},layout=contiguous,size=1MiB", "--device", device,
                     "--results", str(results), "--allow-quick"])

    assert cite("0", "emu:1") == 0
    assert "no peer access: can_device_access_peer(emu:1, emu:0) was False" in \
        capsys.readouterr().out
    assert cite("1", "emu:0") == 0
    assert "no peer access" not in capsys.readouterr().out
    assert cite("1", "emu:7") == 2
    assert "device 'emu:7' measured nothing" in capsys.readouterr().err
