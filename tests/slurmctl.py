"""A real one-node Slurm for the fleet tests: Debian's slurm-wlm and munge, started from a
temporary folder and stopped by process id.

What Debian bookworm's Slurm 22.05 needs to run here, without systemd or cgroups: munged in
the foreground with a key of its own (mode 0400) and its socket in the folder, which Slurm
reaches through ``AuthInfo=socket=``; ``slurmctld -D -i`` and ``slurmd -D`` as root (a
slurmd that is not root can start jobs for no one), with every path (state, spool, pid and
log files) in the folder, the node declared with this host's CPUs and a small memory (a node
declaring more than it has is drained), ``proctrack/linuxproc``, ``task/none``,
``select/cons_tres``, no accounting (``sacct`` answers "accounting storage is disabled") and
no job completion log. Two free ports, chosen by binding to port 0, keep it clear of any other
Slurm. Clients find it through ``SLURM_CONF``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def unavailable() -> str | None:
    """Why no Slurm can be started here, or None."""
    missing = [p for p in PROGRAMS if not (shutil.which(p) or shutil.which(p, path="/usr/sbin"))]
    if missing:
        return (f"needs Debian's slurm-wlm and munge ({', '.join(missing)} missing; "
                "scripts/test installs them as root)")
    if os.geteuid() != 0:
        return "needs root: a slurmd that is not root cannot start jobs"
    return None


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _program(name: str) -> str:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin") or name


class OneNodeSlurm:
    """``start()`` writes slurm.conf, starts munged, slurmctld and slurmd and waits until the
    node is idle; ``stop()`` ends each by its process id. ``env`` is what a client needs."""

    NODE = "xfbnode"
    PARTITION = "fleet"

    def __init__(self) -> None:
        # short: a Unix socket's path holds at most 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="xfb-slurm-", dir="/tmp"))
        self.procs: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_conf(self) -> None:
        r = self.root
        for sub in ("munge", "state", "spool", "log"):
            (r / sub).mkdir(mode=0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ctld_port, slurmd_port = _free_ports(2)
        host = socket.gethostname()
        cpus = os.cpu_count() or 1
        self.conf.write_text("\n".join([
            "ClusterName=xferbench", f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}", f"SlurmdPort={slurmd_port}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={r}/munge/munge.sock", "CredType=cred/munge",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "MpiDefault=none", "ReturnToService=2", "KillWait=5", "MailProg=/bin/true",
            f"NodeName={self.NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} "
            "RealMemory=1000 State=UNKNOWN",
            f"PartitionName={self.PARTITION} Nodes={self.NODE} Default=YES MaxTime=INFINITE "
            "State=UP", ""]))

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 (closed by the child)
        self.procs.append(subprocess.Popen([_program(name), *args], stdout=log,
                                           stderr=subprocess.STDOUT, env=self.env,
                                           stdin=subprocess.DEVNULL))
        log.close()

    def start(self, timeout_s: float = 30.0) -> OneNodeSlurm:
        self._write_conf()
        m = self.root / "munge"
        self._spawn("munged", "-F", "--force", f"--key-file={m}/munge.key",
                    f"--socket={m}/munge.sock", f"--pid-file={m}/munged.pid",
                    f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed")
        self._wait(lambda: (m / "munge.sock").exists(), timeout_s, "munged made no socket")
        self._spawn("slurmctld", "-D", "-i")
        self._spawn("slurmd", "-D", "-N", self.NODE)
        self._wait(lambda: self.sinfo() == "idle", timeout_s,
                   "the node did not become idle")
        return self

    def sinfo(self) -> str:
        out = subprocess.run([_program("sinfo"), "-h", "-N", "-o", "%t"], env=self.env,
                             capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    def _wait(self, ok, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ok():
            dead = [p for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"one-node Slurm: {what}: {self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        return " | ".join(f"{p.name}: {p.read_text(errors='replace')[-400:]}"
                          for p in sorted((self.root / "log").glob("*")) if p.is_file())

    def run(self, *cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run([_program(cmd[0]), *cmd[1:]], env=self.env, capture_output=True,
                              text=True, timeout=60)

    def stop(self) -> None:
        """slurmd, slurmctld, munged: each by its process id, SIGTERM then SIGKILL."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        shutil.rmtree(self.root, ignore_errors=True)
