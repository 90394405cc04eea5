"""The before/after check of decoding: identical files pass, a changed confidence or value fails,
files of different products are refused with where they differ."""

import json

import pytest

from tools.bench.same_decoding import main


def write(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


def line(key, brand=("acme", 0.91), size=("n/a", 0.5)):
    return {
        "key": key,
        "category": "Food",
        "gold": {"Brand": ["acme"]},
        "hpd": {"Brand": brand, "Size": size},
    }


def test_identical_files_pass_and_a_change_in_any_confidence_or_value_fails(tmp_path, capsys):
    before = write(tmp_path / "a.jsonl", [line("p1"), line("p2")])
    assert main([before, write(tmp_path / "b.jsonl", [line("p1"), line("p2")])]) == 0
    assert "identical values 4/4, identical confidences 4/4" in capsys.readouterr().out
    assert (
        main([before, write(tmp_path / "c.jsonl", [line("p1"), line("p2", brand=("acme", 0.9100001))])]) == 1
    )
    assert "identical confidences 3/4" in capsys.readouterr().out
    assert main([before, write(tmp_path / "d.jsonl", [line("p1", size=("12 oz", 0.5)), line("p2")])]) == 1
    assert "identical values 3/4" in capsys.readouterr().out


def test_files_of_other_products_are_refused_with_the_line(tmp_path, capsys):
    before = write(tmp_path / "a.jsonl", [line("p1"), line("p2")])
    with pytest.raises(SystemExit) as exit_:
        main([before, write(tmp_path / "b.jsonl", [line("p1"), line("p3")])])
    assert exit_.value.code == 2 and "line 2: product 'p2' before, 'p3' after" in capsys.readouterr().err
