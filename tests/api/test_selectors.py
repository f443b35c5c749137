from __future__ import annotations

import pytest

from berth.core.api.meta.selectors import LabelSelector, NodeSelector, NodeSelectorTerm, Requirement, TopologyTerm

L = {"zone": "a", "tier": "db", "gen": "5"}


def term(*exprs: Requirement, fields: tuple[Requirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        (Requirement("zone", "In", ("a", "b")), True),
        (Requirement("zone", "In", ("b",)), False),
        (Requirement("missing", "In", ("a",)), False),
        (Requirement("zone", "NotIn", ("b",)), True),
        (Requirement("zone", "NotIn", ("a",)), False),
        (Requirement("missing", "NotIn", ("a",)), True),
        (Requirement("zone", "Exists"), True),
        (Requirement("missing", "Exists"), False),
        (Requirement("zone", "DoesNotExist"), False),
        (Requirement("missing", "DoesNotExist"), True),
        (Requirement("gen", "Gt", ("4",)), True),
        (Requirement("gen", "Gt", ("5",)), False),
        (Requirement("gen", "Lt", ("6",)), True),
        (Requirement("zone", "Gt", ("1",)), False),  # non-integer label value
        (Requirement("missing", "Lt", ("1",)), False),
    ],
)
def test_operators(req: Requirement, expected: bool) -> None:
    assert req.is_valid()
    assert NodeSelector((term(req),)).matches(L, "n1") is expected


@pytest.mark.parametrize(
    "req",
    [
        Requirement("zone", "In", ()),
        Requirement("zone", "Exists", ("a",)),
        Requirement("gen", "Gt", ("x",)),
        Requirement("gen", "Gt", ("1", "2")),
        Requirement("zone", "Like", ("a",)),
        Requirement("bad key!", "Exists"),
        Requirement("zone", "In", ("not a value!",)),
    ],
)
def test_invalid_requirement_never_matches(req: Requirement) -> None:
    assert not req.is_valid()
    assert NodeSelector((term(req),)).matches(L, "n1") is False


def test_terms_or_and_expressions_and() -> None:
    t_bad = term(Requirement("zone", "In", ("b",)))
    t_good = term(Requirement("zone", "In", ("a",)), Requirement("tier", "In", ("db",)))
    t_half = term(Requirement("zone", "In", ("a",)), Requirement("tier", "In", ("web",)))
    assert NodeSelector((t_bad, t_good)).matches(L, "n1")
    assert not NodeSelector((t_bad, t_half)).matches(L, "n1")


def test_empty_terms_match_nothing() -> None:
    assert not NodeSelector(()).matches(L, "n1")
    assert not NodeSelector((term(),)).matches(L, "n1")
    # an empty term is dropped; the other terms still decide
    assert NodeSelector((term(), term(Requirement("zone", "Exists")))).matches(L, "n1")


def test_invalid_term_does_not_spoil_valid_one() -> None:
    bad = term(Requirement("zone", "In", ()))
    good = term(Requirement("zone", "In", ("a",)))
    assert NodeSelector((bad, good)).matches(L, "n1")


@pytest.mark.parametrize(
    ("op", "values", "node", "expected"),
    [
        ("In", ("n1",), "n1", True),
        ("In", ("n1",), "n2", False),
        ("NotIn", ("n1",), "n2", True),
        ("In", ("n1", "n2"), "n1", False),  # matchFields takes exactly one value
        ("Exists", (), "n1", False),
    ],
)
def test_match_fields_on_name(op: str, values: tuple[str, ...], node: str, expected: bool) -> None:
    sel = NodeSelector((term(fields=(Requirement("metadata.name", op, values),)),))
    assert sel.matches(L, node) is expected


def test_label_selector() -> None:
    assert LabelSelector().matches({})
    assert LabelSelector(match_labels=(("tier", "db"),)).matches(L)
    assert not LabelSelector(match_labels=(("tier", "web"),)).matches(L)
    sel = LabelSelector(match_labels=(("tier", "db"),), match_expressions=(Requirement("zone", "NotIn", ("a",)),))
    assert not sel.matches(L)


def test_topology_terms() -> None:
    assert TopologyTerm((("zone", ("a", "b")),)).matches(L)
    assert not TopologyTerm((("zone", ("a",)), ("tier", ("web",)))).matches(L)
    assert not TopologyTerm(()).matches(L)
