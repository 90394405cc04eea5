"""The cluster drill's machinery: it refuses to run without root; its hosts reach one another on the
drill's bridge and nothing else, each with its own /tmp, host name and a read-only checkout; a host
cut off at the switch is unreachable until its link comes back; and every namespace goes when the
drill closes, or, for a drill that was SIGKILLed, when the next one starts."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.drill.cluster.hosts import Cluster
from tools.drill.cluster.network import Network, base36, remove_leftovers

ROOT = Path(__file__).resolve().parents[2]
as_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"),
    reason="network and mount namespaces need root, ip and unshare",
)


def drill_names() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in listed.splitlines() if line.startswith("sd")}


def reaches(network: Network, host: str, address: str, port: int = 9) -> str:
    """What connecting from `host` to address:port gives: refused (reached, nothing listens), or
    the error that says it was not reached."""
    code = (
        "import socket,sys\n"
        f"s=socket.socket(); s.settimeout(2)\n"
        f"try: s.connect(({address!r},{port})); print('open')\n"
        "except ConnectionRefusedError: print('refused')\n"
        "except OSError as e: print(type(e).__name__, e.errno)\n"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", network.name(host), sys.executable, "-c", code],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_it_refuses_to_run_without_root():
    # A user namespace of its own makes the command run as the overflow user, not root.
    command = [sys.executable, "manage.py", "cluster_drill", "--products", "5"]
    if os.geteuid() == 0:
        command = ["unshare", "--user", *command]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "cluster_drill needs root: it makes network and mount namespaces" in done.stderr


@as_root
def test_hosts_reach_each_other_on_the_bridge_only_and_closing_removes_everything():
    with Network() as network:
        network.add_host("a", 2)
        b = network.add_host("b", 3)
        assert {network.name(h) for h in ("sw", "a", "b")} <= drill_names()
        assert reaches(network, "a", b) == "refused"  # reached b: nothing listens on port 9
        assert reaches(network, "b", network.controller) == "refused"  # the drill's own end
        assert reaches(network, "a", "192.0.2.1") == "OSError 101"  # ENETUNREACH: no route out
        network.set_link("b", up=False)
        assert reaches(network, "a", b).startswith(("TimeoutError", "OSError 113"))  # cut off
        network.set_link("b", up=True)
        assert reaches(network, "a", b) == "refused"
        prefix = network.prefix
    assert not any(name.startswith(prefix) for name in drill_names())
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert prefix not in links


@as_root
def test_a_host_has_its_own_tmp_and_host_name_and_a_read_only_checkout(tmp_path):
    with Network() as network:
        network.add_host("solo", 2)
        cluster = Cluster(network, ROOT, tmp_path / "logs", model_source=ROOT / "models" / "slotwise-ave")
        script = (
            "echo private > /tmp/only-here; hostname; ls /tmp/models/model/config.json; "
            f"touch {ROOT}/.cluster-drill-probe 2>/dev/null && echo WRITABLE || echo READ-ONLY"
        )
        proc = cluster.start("solo", ["sh", "-c", script], {}, model=True)
        assert proc.wait(timeout=60) == 0
        said = (tmp_path / "logs" / "solo.log").read_text().split()
    assert said == ["solo", "/tmp/models/model/config.json", "READ-ONLY"]
    assert not Path("/tmp/only-here").exists() and not (ROOT / ".cluster-drill-probe").exists()


@as_root
def test_a_later_drill_removes_what_a_killed_one_left():
    # A drill process that dies with SIGKILL cannot clean up; its namespaces carry its pid.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    network = Network(prefix=f"sd{base36(child.pid)}-").open()
    network.add_host("gpu1", 2)
    child.kill()
    child.wait()
    time.sleep(0.2)
    removed = remove_leftovers()
    assert {network.name("sw"), network.name("gpu1")} <= set(removed)
    assert not any(name.startswith(network.prefix) for name in drill_names())
