"""A refused request (403) is logged in one line, who asked for what and why, with no traceback
(issue 51: 282 refusals wrote 282 tracebacks to the error log)."""

import logging

import pytest
from django.urls import reverse

from slotwise.body_guard import SMALL_BODY_BYTES


@pytest.fixture
def request_log(caplog):
    """What Django's request logger writes, through the project's LOGGING configuration."""
    with caplog.at_level(logging.INFO, logger="django.request"):
        yield caplog


def records_of(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "django.request"]


@pytest.mark.parametrize("debug", [False, True])
def test_a_refused_page_is_logged_in_one_line_without_a_traceback(
    client_for, carol, request_log, settings, debug
):
    settings.DEBUG = debug
    response = client_for(carol).get(reverse("health:status"), REMOTE_ADDR="192.0.2.30")
    assert response.status_code == 403 and "This page is for: admin" in response.content.decode()

    (record,) = records_of(request_log)
    assert record.exc_info is None and record.levelno == logging.WARNING
    assert (
        record.getMessage()
        == f"Refused GET {reverse('health:status')} for carol at 192.0.2.30: this page is for: admin"
    )


def test_a_body_refused_unread_is_logged_in_one_line_too(client_for, carol, request_log):
    body = "x" * (SMALL_BODY_BYTES + 1)
    response = client_for(carol).post(
        reverse("health:status"), body, content_type="text/plain", REMOTE_ADDR="192.0.2.31"
    )
    assert response.status_code == 403

    (record,) = records_of(request_log)
    assert record.exc_info is None
    assert (
        record.getMessage()
        == f"Refused POST {reverse('health:status')} for carol at 192.0.2.31: this page is for: admin"
    )
