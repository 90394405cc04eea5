"""`manage.py simulate_review` refuses a products file it cannot use: the message names the file and
the line at fault, and nothing is stored (real PostgreSQL; no decoding happens, so these are quick;
test_simulate_review.py runs the command on good files)."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalog.models import Catalog
from tests.support.bad_input import changes_between, stored_state

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "content, where",
    [
        ('{"input": "A shoe", "category": "Shoes", "target_scores": {}}\nnot json\n', "line 2"),
        (
            '{"input": "A shoe", "category": "Shoes", "target_scores": {"Brand": {"A": 1}}}\n{"input": "B"}\n',
            "line 2",
        ),
        ('{"input": "", "category": "Shoes", "target_scores": {"Brand": {"A": 1}}}\n', "line 1"),
        ('\n\n{"input": "A", "category": "Shoes", "target_scores": {"Brand": "A"}}\n', "line 3"),
        (
            '{"input": "' + "x" * 1200 + '", "category": "Shoes", "target_scores": {"Brand": {"x": 1}}}\n',
            "line 1",
        ),
        ("", "holds no product"),
    ],
)
def test_a_bad_file_is_refused_naming_its_line_and_nothing_is_stored(tmp_path, content, where):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    before = stored_state()
    with pytest.raises(CommandError) as refused:
        call_command("simulate_review", str(path), "--json", stdout=StringIO())
    assert str(path) in str(refused.value) and where in str(refused.value)
    assert changes_between(before, stored_state()) == 0
    assert not Catalog.objects.exists()


def test_a_missing_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(CommandError, match=f"{path}: no such file"):
        call_command("simulate_review", str(path), stdout=StringIO())
    assert not Catalog.objects.exists()
