"""Move the test database to chosen migrations, for the tests of data migrations."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(**apps_at: str):
    """The named apps at the named migrations (app=migration name), every other app at its latest
    migration that does not need a named app past its named one (training 0003 needs extraction
    0009, so with extraction at 0004 training stays at 0002); returns the historical models there."""
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    named = list(apps_at.items())
    allowed = {node for target in named for node in graph.forwards_plan(target) if node[0] == target[0]}

    def fits(node) -> bool:
        return all(n[0] not in apps_at or n in allowed for n in graph.forwards_plan(node))

    targets = list(named)
    for leaf in graph.leaf_nodes():
        if leaf[0] in apps_at:
            continue
        node = leaf
        while node is not None and not fits(node):
            earlier = [p for p in graph.node_map[node].parents if p[0] == node[0]]
            node = earlier[0].key if earlier else None
        targets.append(node or (leaf[0], None))  # (app, None): none of the app's migrations
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


@pytest.fixture
def back_to_latest():
    """Every app back at its latest migration after a test that moved the database back."""
    yield
    migrate()
