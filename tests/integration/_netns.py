"""A small lab of network namespaces for tests: each "host" is a namespace with one veth
interface, all joined by a bridge in a switch namespace of its own, so processes in
different hosts talk over real interfaces. Addresses exist only inside the namespaces
(the root namespace gets neither an address nor an interface); everything is deleted on
exit. Needs root and iproute2.

    with NetnsLab(["sched", "w1", "w2", "srv"]) as lab:
        lab.address("srv")                           # "10.231.17.4"
        lab.popen("srv", [python, "-m", "triple_py.server", ...])
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from typing import Dict, List, Sequence

__all__ = ["NetnsLab", "netns_available"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def netns_available() -> str:
    """'' when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    probe = f"t23probe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except subprocess.CalledProcessError as exc:
        return f"ip netns add failed: {exc.stderr.decode(errors='replace').strip()}"
    _ip("netns", "del", probe)
    return ""


class NetnsLab:
    """Namespaces ``<tag>-<host>`` on one /24 (host i gets .i+1), plus ``<tag>-sw``."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.tag = f"t{os.getpid() % 100000}"
        self.hosts = list(hosts)
        self.subnet = f"10.{random.randint(100, 250)}.{random.randint(1, 250)}"
        self.made: List[str] = []
        self.procs: List[subprocess.Popen] = []
        self._addresses: Dict[str, str] = {h: f"{self.subnet}.{i + 1}"
                                           for i, h in enumerate(self.hosts)}

    def ns(self, host: str) -> str:
        """The namespace name of ``host``."""
        return f"{self.tag}-{host}"

    def address(self, host: str) -> str:
        """The IPv4 address of ``host`` (only inside the lab)."""
        return self._addresses[host]

    def __enter__(self) -> "NetnsLab":
        try:
            switch = self.ns("sw")
            for name in [switch] + [self.ns(h) for h in self.hosts]:
                _ip("netns", "add", name)
                self.made.append(name)
                _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", switch, "link", "set", "br0", "up")
            for i, host in enumerate(self.hosts):
                port, nic = f"p{i}", f"eth{i}"
                _ip("-n", switch, "link", "add", port, "type", "veth", "peer", "name", nic,
                    "netns", self.ns(host))
                _ip("-n", switch, "link", "set", port, "master", "br0", "up")
                _ip("-n", self.ns(host), "addr", "add", f"{self.address(host)}/24", "dev", nic)
                _ip("-n", self.ns(host), "link", "set", nic, "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def popen(self, host: str, command: Sequence[str], **kw) -> subprocess.Popen:
        """Starts ``command`` inside ``host``'s namespace (stopped on exit)."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *command], **kw)
        self.procs.append(proc)
        return proc

    def run(self, host: str, command: Sequence[str], timeout: float, **kw
            ) -> subprocess.CompletedProcess:
        """Runs ``command`` inside ``host``'s namespace to its end (hard timeout)."""
        return subprocess.run(["ip", "netns", "exec", self.ns(host), *command],
                              timeout=timeout, **kw)

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
        self.made.clear()
