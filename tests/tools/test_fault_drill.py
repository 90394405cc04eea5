"""The fault drill's kill_while_writing case against real worker processes: it finds the victim's
open write transaction by the drill's own marker, kills it there, and nothing is lost or doubled."""

import pytest
import redis
from django.conf import settings

from tools.drill.cases import KillWhileWriting, Setup
from tools.drill.catalog import drill_catalog

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def empty_queue():
    """Messages left in this Redis database by earlier tests must not wake these workers."""
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


def test_it_kills_a_worker_inside_its_write_transaction_and_loses_nothing(tmp_path):
    setup = Setup(
        catalog=drill_catalog("Fault drill (12 products)", 12),
        workers=1,
        batch_size=4,
        model_dir=settings.FAST_MODEL_DIR,
        log_dir=tmp_path,
        timeout=300,
    )

    result = KillWhileWriting(setup).run()

    assert result["error"] == ""
    assert result["killed"].startswith("kill_while_writing-w1@")
    assert "transaction open, not committed" in result["killed_while"]
    assert (result["lost"], result["duplicated"], result["status"]) == (0, 0, "done")
    assert result["page_says_what_happened"], result["run_page"]
    assert result["ok"], result
