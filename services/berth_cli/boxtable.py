"""`berth evaluate`'s table, drawn without rich's renderables: the bytes rich prints to a file or a
pipe, at a fraction of the cost (1,000 pods in 9 columns: rich takes about a second, nearly all of it
styling and re-measuring each cell's segments).

The layout is rich's own: its rules for measuring columns, narrowing them to the console and
wrapping each cell (`ratio_reduce` and `Table._collapse_widths` reused here; `divide_line` written
again for text of a cell per character, where rich measures each word's cells). rich still
draws the table on a terminal (styles), and wherever a string is not plain printable ASCII (wide
characters, tabs) or the columns leave a cell no room: `draw` returns None there.
tests/test_cli_boxtable.py holds the two to the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from rich._ratio import ratio_reduce
from rich.box import HEAVY_HEAD
from rich.console import Console
from rich.table import Table

PAD = 2  # a space either side of every cell: rich's default padding (0, 1)
_TRAILING = re.compile(r"\s+$")
_WORD = re.compile(r"\s*\S+\s*")  # rich's word: one with the whitespace around it
_MARKUP = re.compile(r"\[|:\S*:")  # what rich may read as markup or an emoji code in a title or header


def drawable(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Every string plain printable ASCII (newlines apart): a cell per character, the only whitespace
    a space; nothing in the title and headers that rich may parse as markup (it does not in cells)."""
    if any(_MARKUP.search(text) for text in (title, *headers)):
        return False
    texts = [title, *headers, *(c for row in rows for c in row)]
    return all(text.isascii() and text.replace("\n", "").isprintable() for text in texts)


def _longest(cells: Sequence[str]) -> int:
    """The longest line of a column's cells."""
    return max((len(line) for c in cells for line in c.splitlines()), default=0)


def _fit(longest: int, width: int) -> int:
    """rich's measured maximum of a padded column whose longest line is `longest`, at most `width`
    wide. Where that leaves no room inside the padding, rich measures otherwise, and draws the table
    itself (draw): a column of empty cells, or one narrowed to PAD or less."""
    return min(longest + PAD, width)


def widths(columns: Sequence[Sequence[str]], room: int) -> list[int]:
    """Each column's width, padding included, as rich's Table lays them out in `room` cells. Each
    column's cells are measured once: narrowed, a column is its longest line clamped again."""
    longest = [_longest(col) for col in columns]
    out = [_fit(n, room) for n in longest]
    if sum(out) > room:
        out = Table._collapse_widths(out, [True] * len(out), room)
        if sum(out) > room:
            out = ratio_reduce(sum(out) - room, [1] * len(out), out, out)
        out = [_fit(n, w) for n, w in zip(longest, out, strict=True)]
    return out


def wrap(text: str, width: int) -> list[str]:
    """A cell's lines `width` wide: rich's fold wrapping, left-justified."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:  # every word fits: rich breaks nowhere
            out.append(line.ljust(width))
            continue
        bounds = [0, *_breaks(line, width), len(line)]
        for start, end in pairwise(bounds):
            piece = line[start:end]
            if len(piece) > width and (space := _TRAILING.search(piece)):
                piece = piece[: len(piece) - min(len(space.group(0)), len(piece) - width)]
            out.append(piece[:width].ljust(width))
    return out


def _breaks(line: str, width: int) -> list[int]:
    """rich's divide_line with fold, for text of a cell per character: where the line breaks so
    that each piece fits `width` (a word on a line of its own, a word too long folded)."""
    out: list[int] = []
    offset = 0  # cells used on the current line
    for m in _WORD.finditer(line):
        start, word = m.start(), m.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded: a break before each piece
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for piece in pieces[:-1]:
                if start:
                    out.append(start)
                start += len(piece)
            if start:
                out.append(start)
            offset = len(pieces[-1])
        elif offset and start:
            out.append(start)
            offset = len(word)
    return out


def draw(console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str | None:
    """The table (rich's default box, a left-justified title) as rich prints it to `console`, which is
    not a terminal; None where rich must draw it."""
    if not drawable(title, headers, rows):
        return None
    box = HEAVY_HEAD.substitute(console.options, safe=console.safe_box)
    columns = [[h, *(row[i] for row in rows)] for i, h in enumerate(headers)]
    edges = len(headers) + 1  # the box's vertical lines
    sizes = widths(columns, console.width - edges)
    if any(w <= PAD for w in sizes):
        return None
    out = [line + "\n" for line in wrap(title, sum(sizes) + edges)]
    out.append(box.get_top(sizes) + "\n")
    lined = [(box.head_left, box.head_vertical, box.head_right)]
    lined += [(box.mid_left, box.mid_vertical, box.mid_right)] * (len(rows) - 1)
    lined += [(box.foot_left, box.foot_vertical, box.foot_right)] if rows else []
    for index, (row, (left, between, right)) in enumerate(zip([headers, *rows], lined, strict=True)):
        cells = [wrap(text, w - PAD) for text, w in zip(row, sizes, strict=True)]
        height = max(map(len, cells))
        for cell, w in zip(cells, sizes, strict=True):
            blank = [" " * (w - PAD)] * (height - len(cell))
            cell[:] = blank + cell if index == 0 else cell + blank  # the header sits at the bottom
        for n in range(height):
            out.append(left + between.join(f" {cell[n]} " for cell in cells) + right + "\n")
        if index == 0:
            out.append(box.get_row(sizes, "head", edge=True) + "\n")
    out.append(box.get_bottom(sizes) + "\n")
    return "".join(out)
