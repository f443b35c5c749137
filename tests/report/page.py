"""A small DOM of the report's HTML (html.parser), so tests read it as a browser would: by elements."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "img", "br", "input", "link", "hr", "source", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = field(default_factory=list)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def walk(self) -> Iterator[Element]:
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.walk()

    def all(self, tag: str, cls: str | None = None, **attrs: str) -> list[Element]:
        """Descendants (self included) with this tag, class and attributes."""
        return [
            el
            for el in self.walk()
            if el.tag == tag
            and (cls is None or cls in el.classes())
            and all(el.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())
        ]

    def one(self, tag: str, cls: str | None = None, **attrs: str) -> Element:
        found = self.all(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def cells(self) -> list[list[str]]:
        """A table's body rows, each cell's text."""
        return [[td.text().strip() for td in tr.all("td")] for tr in self.one("tbody").all("tr")]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, dict(attrs))
        self.stack[-1].children.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Element:
    """The page's DOM; every element must be closed where it opened (the report writes them so)."""
    b = _Builder()
    b.feed(page)
    b.close()
    assert b.stack == [b.root], [el.tag for el in b.stack]
    return b.root
