"""The deployment docs name only real settings and real files."""

from __future__ import annotations

import re

import pytest

from berth.settings import ENV
from tests.deploy.helpers import BERTH_VAR, ROOT

DOCS = ["docs/deploy.md", "deploy/README.md", "README.md"]


@pytest.mark.parametrize("doc", DOCS)
def test_settings_named_in_docs_exist(doc: str) -> None:
    unknown = set(BERTH_VAR.findall((ROOT / doc).read_text())) - ENV.keys()
    assert not unknown, sorted(unknown)


@pytest.mark.parametrize("doc", DOCS)
def test_paths_named_in_docs_exist(doc: str) -> None:
    text = (ROOT / doc).read_text()
    base = (ROOT / doc).parent
    for path in re.findall(r"`((?:deploy|tests|examples|docs)/[\w./-]+)`", text):
        assert (ROOT / path).exists(), path
    for path in re.findall(r"\]\(([\w./-]+\.md)\)", text):
        assert (base / path).exists(), path
