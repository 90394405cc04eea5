"""scripts/services.py: each checkout gets ports of its own and never uses another checkout's servers.

Issue #15: `make test` reused a PostgreSQL that another checkout had started on the same port, and
a stale test database there failed 189 tests at set-up. These tests run the script's functions on
checkouts made in a temp dir; the only server they start is one small Redis.
"""

import socket
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, connections

from scripts.local_services import checkout as checkout_files
from scripts.local_services import owners, postgres_server, redis_server
from scripts.local_services import ports as local_ports
from scripts.local_services.checkout import Checkout, Ports, ServicesError
from tests.support.test_database import drop_leftover_test_database


@pytest.fixture(autouse=True)
def no_port_overrides(monkeypatch):
    # `services.py urls` exports these; here every checkout must find its own.
    monkeypatch.delenv("SLOTWISE_PG_PORT", raising=False)
    monkeypatch.delenv("SLOTWISE_REDIS_PORT", raising=False)


def make_checkout(path: Path) -> Checkout:
    (path / "scripts").mkdir(parents=True)
    (path / "scripts" / "services.py").touch()  # what marks a folder as a checkout in messages
    return Checkout(path, path / ".data")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def listening():
    """listening(port): something that is not a Slotwise server holds the port."""
    sockets = []

    def hold(port: int) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        sockets.append(sock)

    yield hold
    for sock in sockets:
        sock.close()


def test_two_checkouts_get_different_ports_and_each_keeps_its_own(tmp_path):
    first, second = make_checkout(tmp_path / "one"), make_checkout(tmp_path / "two")
    ports_one, ports_two = local_ports.ports(first), local_ports.ports(second)

    assert ports_one != ports_two
    assert {ports_one.pg, ports_one.redis}.isdisjoint({ports_two.pg, ports_two.redis})
    assert ports_one.redis == ports_one.pg + 1
    assert ports_one.pg not in local_ports.LEGACY_PORTS  # a new checkout never takes the old ports
    assert first.ports_file.read_text() == f'{{"pg": {ports_one.pg}, "redis": {ports_one.redis}}}\n'
    assert local_ports.ports(first) == ports_one  # recorded, not chosen again


def test_a_taken_port_is_skipped_when_ports_are_chosen(tmp_path, listening):
    checkout = make_checkout(tmp_path / "c")
    own_pg, own_redis = next(local_ports.hashed_pairs(checkout.root))
    listening(own_redis)

    chosen = local_ports.ports(checkout)
    assert chosen.pg != own_pg and chosen.redis != own_redis
    assert (chosen.pg, chosen.redis) in list(local_ports.hashed_pairs(checkout.root))


def test_a_checkout_with_data_from_before_keeps_the_old_ports_unless_taken(tmp_path, monkeypatch, listening):
    legacy = (free_port(), free_port())
    monkeypatch.setattr(local_ports, "LEGACY_PORTS", legacy)
    old = make_checkout(tmp_path / "old")
    old.pgdata.mkdir(parents=True)
    (old.pgdata / "PG_VERSION").write_text("16\n")
    assert local_ports.ports(old) == Ports(*legacy)

    other = make_checkout(tmp_path / "other")
    other.pgdata.mkdir(parents=True)
    (other.pgdata / "PG_VERSION").write_text("16\n")
    listening(legacy[0])  # the first checkout's PostgreSQL, say
    assert local_ports.ports(other) == Ports(*next(local_ports.hashed_pairs(other.root)))


def test_it_refuses_another_checkouts_redis_and_names_it(tmp_path):
    owner, intruder = make_checkout(tmp_path / "owner"), make_checkout(tmp_path / "intruder")
    port = free_port()
    redis_server.redis_up(owner, port)
    try:
        with pytest.raises(ServicesError) as refused:
            redis_server.redis_up(intruder, port)
        message = str(refused.value)
        assert f"Redis on port {port} is not this checkout's ({intruder.root})" in message
        assert f"it belongs to the checkout {owner.root} (its data: {owner.redis_dir})" in message
        assert f"cd {owner.root} && make services-down" in message
        assert f"rm {intruder.ports_file}" in message

        redis_server.redis_down(intruder)  # stops only its own: the owner's keeps answering
        assert owners.is_ours(owners.redis_on(port), owner.redis_dir, checkout_files.redis_pid(owner))
    finally:
        redis_server.redis_down(owner)
    assert owners.port_is_free(port)


def test_it_refuses_a_postgresql_that_runs_from_another_checkouts_data(tmp_path):
    """The test run's own PostgreSQL is, for a checkout in a temp dir, someone else's."""
    db = settings.DATABASES["default"]
    listener = owners.postgres_on(int(db["PORT"] or 5432))
    if db["HOST"] not in {"127.0.0.1", "localhost"} or listener is None or listener.data_dir is None:
        pytest.skip("DATABASE_URL is not a local PostgreSQL started by scripts/services.py")
    intruder = make_checkout(tmp_path / "intruder")
    with pytest.raises(ServicesError, match=f"its data: {listener.data_dir}"):
        postgres_server.pg_up(intruder, listener.port)
    assert not intruder.pgdata.exists()  # refused before anything was made or started


def test_it_restarts_no_postgresql_but_its_own(tmp_path):
    """The fault drill's restart-postgres, asked by a checkout whose server this is not."""
    db = settings.DATABASES["default"]
    listener = owners.postgres_on(int(db["PORT"] or 5432))
    if db["HOST"] not in {"127.0.0.1", "localhost"} or listener is None or listener.data_dir is None:
        pytest.skip("DATABASE_URL is not a local PostgreSQL started by scripts/services.py")
    intruder = make_checkout(tmp_path / "intruder")
    postmaster = checkout_files._pid_in(listener.data_dir / "postmaster.pid")
    with pytest.raises(ServicesError, match="is not this checkout's running server: not restarted"):
        postgres_server.pg_restart(intruder, listener.port)
    # the same server answers, never stopped: its postmaster is the one from before
    assert owners.postgres_on(listener.port).data_dir == listener.data_dir
    assert checkout_files._pid_in(listener.data_dir / "postmaster.pid") == postmaster


def test_a_leftover_test_database_is_dropped_with_its_connections(django_db_blocker):
    leftover = "test_slotwise_leftover_probe"
    with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {leftover} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {leftover}")
    holder_settings = {**connection.settings_dict, "NAME": leftover, "TEST": {"NAME": leftover}}
    holder = type(connections["default"])(holder_settings, alias="leftover_holder")
    try:
        with django_db_blocker.unblock():
            holder.connect()  # a killed run's worker, still connected
            assert drop_leftover_test_database(holder) == leftover
            with connection._nodb_cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [leftover])
                assert cursor.fetchone() == (0,)
    finally:
        holder.close()


def test_a_broken_record_or_port_is_named(tmp_path, monkeypatch):
    checkout = make_checkout(tmp_path / "c")
    checkout.data.mkdir()
    checkout.ports_file.write_text('{"pg": 16001}')
    with pytest.raises(ServicesError, match=r"ports.json is not \{\"pg\": PORT, \"redis\": PORT\}: fix it"):
        local_ports.ports(checkout)
    checkout.ports_file.unlink()
    monkeypatch.setenv("SLOTWISE_PG_PORT", "54x")
    with pytest.raises(ServicesError, match="SLOTWISE_PG_PORT='54x' is not a port number"):
        local_ports.ports(checkout)


def test_the_postmaster_pid_is_found_every_time():
    """Issue 31: 2 of 40 `make services` calls rejected the checkout's own PostgreSQL ("pid None"):
    /proc was read after the probed backend had exited."""
    db = settings.DATABASES["default"]
    first = owners.postgres_on(int(db["PORT"] or 5432))
    if db["HOST"] not in {"127.0.0.1", "localhost"} or first is None or first.data_dir is None:
        pytest.skip("DATABASE_URL is not a local PostgreSQL started by scripts/services.py")
    postmaster = checkout_files._pid_in(first.data_dir / "postmaster.pid")
    pids = [owners.postgres_on(first.port).pid for _ in range(60)]
    assert pids == [postmaster] * 60
