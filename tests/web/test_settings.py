"""Settings come from the environment; production settings pass `check --deploy` with no warning,
and a bad value fails loudly, naming the variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slotwise.env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_str, parse_database_url

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


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("CATALOG_UPLOAD_MAX_MB", "lots", "CATALOG_UPLOAD_MAX_MB='lots' is not an integer"),
        ("GPU_PRICE_PER_HOUR", "cheap", "GPU_PRICE_PER_HOUR='cheap' is not a number"),
        ("DATABASE_URL", "mysql://u@h/db", "DATABASE_URL scheme 'mysql' is not PostgreSQL"),
        ("DATABASE_URL", "postgres://u@h:5432/", "DATABASE_URL has no database name"),
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
