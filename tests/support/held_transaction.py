"""Someone else's change, made through the product's own code and held uncommitted, so a test can
put a second transaction (a request, a worker's chunk) in line behind its locks, see PostgreSQL say
that it waits, and then let the first commit: a race played out in one order, every time.
"""

import threading

from django.db import connection, transaction

# Far longer than any step of a test takes; reached only when a test is broken, never to pace one.
GIVE_UP_SECONDS = 120


class HeldTransaction:
    """`change()` run in a transaction of its own (a thread, and so a database connection of its
    own), kept open until commit(): what it locked stays locked, what it wrote unseen by others."""

    def __init__(self, change):
        self._change = change
        self._made, self._release = threading.Event(), threading.Event()
        self._error: BaseException | None = None
        self.backend_pid = 0
        self._thread = threading.Thread(target=self._hold, name="held-transaction", daemon=True)

    def _hold(self) -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    self.backend_pid = cursor.fetchone()[0]
                self._change()
                self._made.set()
                self._release.wait()
        except Exception as exc:  # noqa: BLE001 - handed to the test's own thread by commit()
            self._error = exc
        finally:
            self._made.set()
            connection.close()

    def __enter__(self) -> "HeldTransaction":
        self._thread.start()
        assert self._made.wait(GIVE_UP_SECONDS), "the held change did not finish"
        self._raise_its_error()
        return self

    def __exit__(self, *exc_info) -> None:
        self.commit()

    def waiting_behind(self) -> int:
        """How many other sessions wait for a lock this transaction holds (PostgreSQL's own word)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                [self.backend_pid],
            )
            return cursor.fetchone()[0]

    def commit(self) -> None:
        """Let the change commit, and wait until it has (again: nothing more to do)."""
        if self._release.is_set():
            return
        self._release.set()
        self._thread.join(GIVE_UP_SECONDS)
        assert not self._thread.is_alive(), "the held transaction did not end"
        self._raise_its_error()

    def _raise_its_error(self) -> None:
        if self._error is not None:
            raise self._error


def in_own_connection(work):
    """`work` for a thread of its own: the thread's database connection closed when it is done."""

    def run():
        try:
            return work()
        finally:
            connection.close()

    return run
