"""Hosts on a private bridge: one network namespace per host, a veth pair from it to the bridge.

The bridge lives in a namespace of its own (the "switch"), so no host's traffic passes through the
machine's own network stack or firewall; the drill itself joins the bridge through one veth pair
(its controller address). No namespace has a default route: a host reaches the others on the
drill's /24 and nothing else. Every name starts with the drill's prefix (sd<pid>-), so `close`
removes exactly what this drill made, and a later drill removes what a killed one left behind.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import random
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# sd<pid in base 36>-: short enough that "<prefix><host>p" fits a link name's 15 characters.
PREFIX_PATTERN = re.compile(r"^sd([0-9a-z]+)-")
SWITCH = "sw"
BRIDGE = "br0"
KILL_WAIT_SECONDS = 5.0
SUBNET_TRIES = 64


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, rest = divmod(number, 36)
        text = digits[rest] + text
        if not number:
            return text


def _pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def namespace_pids(namespace: str) -> list[int]:
    done = ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in done.stdout.split()] if done.returncode == 0 else []


def kill_namespace_processes(namespace: str) -> int:
    """SIGKILL every process in the namespace (a host dying at once); returns how many there were."""
    pids = namespace_pids(namespace)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while namespace_pids(namespace) and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(pids)


def remove_namespace(namespace: str) -> None:
    kill_namespace_processes(namespace)
    ip("netns", "del", namespace, check=False)


def remove_leftovers() -> list[str]:
    """Namespaces and links of earlier drills whose process is gone (killed before its clean-up)."""
    removed = []
    for line in ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        found = PREFIX_PATTERN.match(name)
        if found and not _pid_alive(int(found.group(1), 36)):
            remove_namespace(name)
            removed.append(name)
    for line in ip("-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        found = PREFIX_PATTERN.match(name)
        if found and not _pid_alive(int(found.group(1), 36)):
            ip("link", "del", name, check=False)
            removed.append(name)
    return removed


def free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that overlaps no address or route of this machine."""
    taken = []
    for line in (
        ip("-4", "route", "show", "table", "all").stdout.splitlines()
        + ip("-4", "-o", "addr").stdout.splitlines()
    ):
        for word in line.split():
            try:
                taken.append(ipaddress.ip_network(word, strict=False))
            except ValueError:
                continue
    taken = [net for net in taken if net.prefixlen > 0]  # the default route covers everything
    for _ in range(SUBNET_TRIES):
        candidate = ipaddress.ip_network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
        if not any(candidate.overlaps(net) for net in taken):
            return candidate
    raise RuntimeError("no free 10.x.y.0/24 for the drill's bridge: every one tried overlaps a route here")


@dataclass
class Network:
    """The drill's bridge and the hosts on it; `close` removes everything it made."""

    prefix: str = field(default_factory=lambda: f"sd{base36(os.getpid())}-")
    subnet: ipaddress.IPv4Network = field(default_factory=free_subnet)
    hosts: dict[str, str] = field(default_factory=dict)  # host name -> address
    namespaces: list[str] = field(default_factory=list)
    controller: str = ""

    def name(self, host: str) -> str:
        return f"{self.prefix}{host}"

    def address(self, index: int) -> str:
        return str(self.subnet.network_address + index)

    def open(self) -> Network:
        switch = self.name(SWITCH)
        self._add_namespace(switch)
        ip("-n", switch, "link", "add", BRIDGE, "type", "bridge")
        ip("-n", switch, "link", "set", BRIDGE, "up")
        # The controller: this process's own namespace, joined to the bridge by one veth pair.
        outside, inside = self.name("ctl"), self.name("ctlp")
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        self._plug(inside)
        self.controller = self.address(1)
        ip("addr", "add", f"{self.controller}/{self.subnet.prefixlen}", "dev", outside)
        ip("link", "set", outside, "up")
        return self

    def _add_namespace(self, namespace: str) -> None:
        ip("netns", "add", namespace)
        self.namespaces.append(namespace)
        ip("-n", namespace, "link", "set", "lo", "up")

    def _plug(self, port: str) -> None:
        switch = self.name(SWITCH)
        ip("link", "set", port, "netns", switch)
        ip("-n", switch, "link", "set", port, "master", BRIDGE)
        ip("-n", switch, "link", "set", port, "up")

    def add_host(self, host: str, index: int) -> str:
        """A namespace named for `host`, at address .index of the subnet; returns the address."""
        namespace, port = self.name(host), self.name(f"{host}p")
        self._add_namespace(namespace)
        ip("link", "add", port, "type", "veth", "peer", "name", f"{namespace}v")
        self._plug(port)
        ip("link", "set", f"{namespace}v", "netns", namespace)
        ip("-n", namespace, "link", "set", f"{namespace}v", "name", "eth0")
        ip("-n", namespace, "addr", "add", f"{self.address(index)}/{self.subnet.prefixlen}", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        self.hosts[host] = self.address(index)
        return self.hosts[host]

    def set_link(self, host: str, up: bool) -> None:
        """The host's cable at the switch: down, every packet to and from it is dropped."""
        ip("-n", self.name(SWITCH), "link", "set", self.name(f"{host}p"), "up" if up else "down")

    def kill_host(self, host: str) -> int:
        return kill_namespace_processes(self.name(host))

    def close(self) -> None:
        """Every process in the drill's namespaces killed, every namespace and link removed."""
        for namespace in reversed(self.namespaces):
            remove_namespace(namespace)
        self.namespaces.clear()
        ip("link", "del", self.name("ctl"), check=False)
        for leftover in [
            line for line in ip("netns", "list").stdout.splitlines() if line.startswith(self.prefix)
        ]:
            remove_namespace(leftover.split()[0])

    def __enter__(self) -> Network:
        return self.open()

    def __exit__(self, *exc_info) -> None:
        self.close()
