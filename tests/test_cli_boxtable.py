"""berth_cli.boxtable draws `berth evaluate`'s table as rich prints it to a file or a pipe: rich itself
is the oracle, on tables of every shape, and at console widths that make it narrow and wrap columns."""

from __future__ import annotations

import io

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from berth_cli import boxtable

WORDS = st.sampled_from(["a", "node-1", "Insufficient cpu", "", " ", "x" * 30, "3 node(s) (n-1, n-2):", "-"])
TEXT = st.lists(WORDS, max_size=5).map(lambda ws: "".join(ws)) | st.text(alphabet="ab -\n", max_size=40)
HEADER = st.sampled_from(["pod", "status", "best nodes (total: plugin scores)", "rejected nodes", "n"])


def rich_table(width: int, title: str, headers: list[str], rows: list[list[str]]) -> str:
    """What berth_cli.show drew with rich, on a console that is not a terminal."""
    out = io.StringIO()
    table = Table(title=title, title_justify="left")
    for h in headers:
        table.add_column(h, overflow="fold")
    for row in rows:
        table.add_row(*(Text(c) for c in row))
    Console(width=width, file=out).print(table)
    return out.getvalue()


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, str, list[str], list[list[str]]]:
    headers = draw(st.lists(HEADER, min_size=1, max_size=9))
    rows = draw(st.lists(st.lists(TEXT, min_size=len(headers), max_size=len(headers)), max_size=6))
    title = draw(st.sampled_from(["berth evaluate: 3 pending pod(s)", "t", "a title long enough to wrap " * 4]))
    return draw(st.integers(10, 240)), title, headers, rows


@settings(max_examples=400, deadline=None)
@given(tables())
@example((220, "berth evaluate: 0 pending pod(s)", ["pod", "status"], []))
@example((30, "t", ["pod", "status", "node"], [["default/p-1", "Scheduled", "node-1\nnode-2"]]))
@example((160, "t", ["pod", "rejected nodes"], [["p", "2 node(s) (a, b):\n  NodeAffinity: x\n"]]))
def test_the_table_is_rich_s_own(case: tuple[int, str, list[str], list[list[str]]]) -> None:
    width, title, headers, rows = case
    drawn = boxtable.draw(Console(width=width, file=io.StringIO()), title, headers, rows)
    if drawn is not None:
        assert drawn == rich_table(width, title, headers, rows)


def test_wide_columns_are_drawn_here_not_left_to_rich() -> None:
    headers = ["pod", "best nodes (total: plugin scores)", "rejected nodes"]
    rows = [[f"default/p-{i}", f"node-{i} (100: a 50, b 50)\nnode-{i + 1} (90)", "x " * 90] for i in range(20)]
    drawn = boxtable.draw(Console(width=160, file=io.StringIO()), "berth evaluate: 20 pending pod(s)", headers, rows)
    assert drawn is not None and drawn == rich_table(160, "berth evaluate: 20 pending pod(s)", headers, rows)


def test_what_rich_must_draw() -> None:
    console = Console(width=100, file=io.StringIO())
    assert boxtable.draw(console, "t", ["pod"], [["名前"]]) is None  # two cells per character
    assert boxtable.draw(console, "t", ["pod"], [["a\tb"]]) is None
    assert boxtable.draw(console, "[bold]t", ["pod"], [["a"]]) is None  # markup in a title
    assert boxtable.draw(console, "t", [":smile:"], [["a"]]) is None  # an emoji code in a header
    assert boxtable.draw(Console(width=8, file=io.StringIO()), "t", ["a", "b", "c"], [["x", "y", "z"]]) is None
