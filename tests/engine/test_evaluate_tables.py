"""The speed bars evaluate and pool print: HPD's median per-chunk speedup over each baseline against
issue 17's bars (4x AR-JSON, 4x prompt lookup, 1.5x fork) and issue 49's (4x AR-JSON at its honest
best), BELOW when it misses."""

from __future__ import annotations

from extraction.engine.evaluate.report import write_speed_bars


def ratio(median: float) -> dict:
    return {"hpd_ratio": {"median": median, "min": median, "max": median, "pairs": 1}}


def test_each_baseline_is_held_to_its_bar(capsys):
    results = {"ar": ratio(3.05), "ar-honest": ratio(4.0), "pld": ratio(12.5), "fork": ratio(1.5)}
    write_speed_bars({**results, "hpd": {}})
    assert capsys.readouterr().out.splitlines() == [
        "speed bar hpd/ar: 3.05x median (bar 4.0x) BELOW",
        "speed bar hpd/ar-honest: 4.00x median (bar 4.0x) ok",
        "speed bar hpd/pld: 12.50x median (bar 4.0x) ok",
        "speed bar hpd/fork: 1.50x median (bar 1.5x) ok",
    ]


def test_a_baseline_that_did_not_run_gets_no_line(capsys):
    write_speed_bars({"ar": ratio(4.2), "hpd": {}})
    assert capsys.readouterr().out == "speed bar hpd/ar: 4.20x median (bar 4.0x) ok\n"
