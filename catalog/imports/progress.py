"""Import progress written on a connection of its own.

The import writes every product in one transaction so a failure leaves nothing behind; its
progress must still be visible while that transaction is open, so it goes through a second,
autocommitting connection that touches nothing but the job's progress counter.
"""

import psycopg
from django.db import connection

from catalog.models import ImportJob

DJANGO_ONLY_PARAMS = ("cursor_factory", "context", "prepare_threshold")


class ProgressWriter:
    def __init__(self, job_id: int):
        params = {k: v for k, v in connection.get_connection_params().items() if k not in DJANGO_ONLY_PARAMS}
        self.job_id = job_id
        self.conn = psycopg.connect(**params, autocommit=True)
        self.sql = f"UPDATE {ImportJob._meta.db_table} SET processed_rows = %s WHERE id = %s"  # noqa: S608

    def report(self, processed_rows: int) -> None:
        self.conn.execute(self.sql, (processed_rows, self.job_id))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "ProgressWriter":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
