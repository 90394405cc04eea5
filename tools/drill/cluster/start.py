"""The cluster drill as `manage.py cluster_drill` runs it: what it needs of the machine, then the drill
with its clean-up on Ctrl-C or SIGTERM."""

import os
import shutil
import signal
from pathlib import Path

from django.conf import settings


def missing_requirement() -> str:
    """Why this machine cannot run the drill ("" when it can)."""
    if os.geteuid() != 0:
        return (
            "cluster_drill needs root: it makes network and mount namespaces (ip netns, unshare). "
            "Run it as root in a machine or container of its own."
        )
    if not shutil.which("ip") or not shutil.which("unshare"):
        return "cluster_drill needs `ip` (iproute2) and `unshare` (util-linux)"
    return ""


def _stop(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the drill's clean-up


def run_cluster_drill(products: int, batch_size: int, timeout: float, say) -> bool:
    """The whole drill (tools/drill/cluster/cases.py); True when every case was ok. Logs go to
    .data/cluster-drill/."""
    from tools.drill.cluster.cases import Drill, Options

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    log_dir = settings.BASE_DIR / ".data" / "cluster-drill"
    shutil.rmtree(log_dir, ignore_errors=True)
    options = Options(
        products,
        batch_size,
        timeout,
        log_dir,
        Path(settings.FAST_MODEL_DIR),  # each GPU host copies it as its bundled model
        settings.BASE_DIR,
    )
    return Drill(options, say=say).run()
