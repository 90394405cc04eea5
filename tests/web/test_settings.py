"""Settings come from the environment; production settings pass `check --deploy` with no warning,
and a bad value fails loudly, naming the variable."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slotwise.env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_str, parse_database_url
from slotwise.processes import needs_secret_key

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "slotwise.settings",
    "DEBUG": "0",
    "SECRET_KEY": "production-like-secret-9f8e7d6c5b4a3928171605f4e3d2c1b0a9f8e7d6c5b4a3928",
    "ALLOWED_HOSTS": "slotwise.example.com",
    "DATABASE_URL": "postgres://slotwise:pw@db.internal:5432/slotwise",
    "REDIS_URL": "redis://redis.internal:6379/0",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    # A clean environment: the test settings put relaxed values into this process's environment.
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_it_passes_the_deploy_check_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_it_fails_loudly_without_a_secret_key_in_production():
    env = {**PRODUCTION_ENV}
    env.pop("SECRET_KEY")
    result = manage("check", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_commands_that_sign_nothing_run_without_a_secret_key(tmp_path):
    """Issue #15: `manage.py ab_stats` stopped with "SECRET_KEY must be set" outside make dev."""
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"}
    votes, out = tmp_path / "votes.csv", tmp_path / "out.json"
    votes.write_text("item,rater,left_system,right_system,vote\np1,carol,hpd,ar,left\np2,carol,ar,hpd,tie\n")
    result = manage("ab_stats", "--votes", str(votes), "--json", str(out), **env)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["systems"]["hpd"]["wins"] == 1
    # Such a command gets an empty key, which Django refuses to sign with: never a guessable one.
    result = manage("shell", "-c", "from django.core import signing; signing.dumps(1)", **env)
    assert result.returncode != 0
    assert "The SECRET_KEY setting must not be empty." in result.stderr


def test_servers_and_workers_still_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"}
    result = manage("runserver", "127.0.0.1:18734", "--noreload", **env)
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    gunicorn = subprocess.run(
        [sys.executable, "-c", "import slotwise.wsgi"],  # what gunicorn loads
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert gunicorn.returncode != 0 and "SECRET_KEY must be set" in gunicorn.stderr
    assert needs_secret_key(["/app/.venv/bin/celery", "-A", "workers", "worker", "-Q", "gpu"])
    assert needs_secret_key(["/usr/lib/python3/site-packages/celery/__main__.py", "-A", "workers", "beat"])
    assert needs_secret_key(["manage.py", "bench_run", "--products", "10"])  # it starts workers
    assert not needs_secret_key(["manage.py", "export_gold", "--out", "gold.jsonl"])
    assert not needs_secret_key(["/usr/local/bin/django-admin", "migrate"])


@pytest.mark.parametrize(
    ("key", "weakness"),
    [
        ("compose-config-check-key", "it has 24 characters, fewer than 50"),
        ("ab" * 30, "it has 2 different characters, fewer than 5"),
        ("django-insecure-" + "q7#v" * 10, "it starts with 'django-insecure-'"),
    ],
)
def test_servers_refuse_a_weak_secret_key_with_debug_off(key, weakness):
    """Issue 51: a weak key was only a warning of `check --deploy`, which nothing ran at start-up."""
    env = {**PRODUCTION_ENV, "SECRET_KEY": key}
    result = manage("runserver", "127.0.0.1:18734", "--noreload", **env)
    assert result.returncode != 0
    assert f"SECRET_KEY is too weak to serve with DEBUG off: {weakness}" in result.stderr
    assert (
        "Make a strong one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        in result.stderr
    )


def test_gunicorn_and_celery_refuse_a_weak_secret_key_and_commands_that_sign_nothing_run():
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env = {**base, **PRODUCTION_ENV, "SECRET_KEY": "too-short"}
    for command in (["-c", "import slotwise.wsgi"], ["-m", "celery", "-A", "workers", "report"]):
        result = subprocess.run(
            [sys.executable, *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode != 0 and "SECRET_KEY is too weak to serve" in result.stderr, command
    # the Dockerfile's collectstatic runs with a key that signs nothing
    result = manage(
        "shell", "-v0", "-c", "print('ran')", **{**PRODUCTION_ENV, "SECRET_KEY": "collectstatic-only"}
    )
    assert result.stdout.split() == ["ran"], result.stderr


def test_make_dev_serves_with_its_own_key_under_debug():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"}
    result = manage("check", **{**env, "DEBUG": "1"})
    assert result.returncode == 0, result.stderr


def test_it_reads_how_many_proxies_to_trust_from_the_environment():
    show = "from django.conf import settings as s; print(s.TRUSTED_PROXY_COUNT)"
    assert manage("shell", "-v0", "-c", show, **PRODUCTION_ENV).stdout.split() == ["0"]
    behind = {**PRODUCTION_ENV, "BEHIND_PROXY": "1"}
    assert manage("shell", "-v0", "-c", show, **behind).stdout.split() == ["1"]
    assert manage("shell", "-v0", "-c", show, **behind, TRUSTED_PROXY_COUNT="2").stdout.split() == ["2"]
    assert (
        "TRUSTED_PROXY_COUNT='0' must be at least 1"
        in manage("check", **behind, TRUSTED_PROXY_COUNT="0").stderr
    )


def test_it_reads_the_sign_in_limits_from_the_environment():
    show = "from django.conf import settings as s; print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME)"
    assert manage("shell", "-v0", "-c", show, **PRODUCTION_ENV).stdout.split() == ["5", "0:15:00"]
    custom = {**PRODUCTION_ENV, "LOGIN_FAILURE_LIMIT": "8", "LOGIN_COOLOFF_MINUTES": "90"}
    assert manage("shell", "-v0", "-c", show, **custom).stdout.split() == ["8", "1:30:00"]


def test_it_reads_the_model_directory_and_the_run_settings_from_the_environment(tmp_path):
    show = (
        "from django.conf import settings as s; "
        "print(s.SLOTWISE_MODEL_DIR, s.EXTRACTION_LEASE_SECONDS, ','.join(s.EXTRACTION_MODEL_DIRS) or '-')"
    )
    model_dir, lease, others = manage("shell", "-v0", "-c", show, **PRODUCTION_ENV).stdout.split()
    assert Path(model_dir).parts[-3:] == (".data", "models", "slotwise-gemma3") and (lease, others) == (
        "30",
        "-",
    )
    # the Apache-2.0 base, one variable away (`make dev BASE=smollm2-135m` sets it): its model, and
    # the adapter training jobs start from
    smollm2 = "from django.conf import settings as s; print(s.SLOTWISE_MODEL_DIR, s.TRAINING_SHIPPED_ADAPTER)"
    served, adapter = manage(
        "shell", "-v0", "-c", smollm2, **PRODUCTION_ENV, SLOTWISE_BASE="smollm2-135m"
    ).stdout.split()
    assert Path(served).parts[-3:] == (".data", "models", "slotwise-smollm2")
    assert Path(adapter).parts[-2:] == ("models", "slotwise-smollm2")
    custom = {
        **PRODUCTION_ENV,
        "SLOTWISE_MODEL_DIR": str(tmp_path),
        "EXTRACTION_LEASE_SECONDS": "6",
        "EXTRACTION_MODEL_DIRS": "/models/a, /models/b",
    }
    assert manage("shell", "-v0", "-c", show, **custom).stdout.split() == [
        str(tmp_path),
        "6",
        "/models/a,/models/b",
    ]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("CATALOG_UPLOAD_MAX_MB", "lots", "CATALOG_UPLOAD_MAX_MB='lots' is not an integer"),
        ("GPU_PRICE_PER_HOUR", "cheap", "GPU_PRICE_PER_HOUR='cheap' is not a number"),
        ("CPU_PRICE_PER_HOUR", "free", "CPU_PRICE_PER_HOUR='free' is not a number"),
        ("LOGIN_FAILURE_LIMIT", "0", "LOGIN_FAILURE_LIMIT='0' must be at least 1"),
        ("LOGIN_COOLOFF_MINUTES", "soon", "LOGIN_COOLOFF_MINUTES='soon' is not an integer"),
        ("EXTRACTION_LEASE_SECONDS", "2", "EXTRACTION_LEASE_SECONDS='2' must be at least 3"),
        ("DATABASE_URL", "mysql://u@h/db", "DATABASE_URL scheme 'mysql' is not PostgreSQL"),
        ("DATABASE_URL", "postgres://u@h:5432/", "DATABASE_URL has no database name"),
        ("SLOTWISE_BASE", "llama", "SLOTWISE_BASE='llama' is not one of gemma3-270m, smollm2-135m"),
        ("TRUSTED_PROXY_COUNT", "2", "TRUSTED_PROXY_COUNT is set but BEHIND_PROXY is off"),
    ],
)
def test_it_names_the_variable_with_a_bad_value(name, value, message):
    result = manage("check", **{**PRODUCTION_ENV, name: value})
    assert result.returncode != 0
    assert message in result.stderr


def test_the_env_helpers_read_good_values_and_refuse_bad_ones(monkeypatch):
    monkeypatch.setenv("SW_FLAG", "yes")
    monkeypatch.setenv("SW_N", "12")
    monkeypatch.setenv("SW_X", "2.5")
    assert env_bool("SW_FLAG") is True and env_int("SW_N", 0) == 12 and env_float("SW_X", 0) == 2.5
    assert env_str("SW_UNSET_VAR", "fallback") == "fallback"
    monkeypatch.setenv("SW_N", "12.5")
    with pytest.raises(ImproperlyConfiguredEnv, match="SW_N='12.5' is not an integer"):
        env_int("SW_N", 0)
    with pytest.raises(ImproperlyConfiguredEnv, match="SW_UNSET_VAR must be set"):
        env_str("SW_UNSET_VAR")
    db = parse_database_url("postgres://me:p%40ss@db:6543/shop?sslmode=require")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "me",
        "p@ss",
        "db",
        "6543",
        "shop",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}
