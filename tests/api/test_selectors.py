from __future__ import annotations

import pytest

from berth.core.api.meta.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    TopologyTerm,
    selector_error,
)

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


VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("labels", "exprs", "want"),
    [
        ((), (), None),
        ((("app", "web"),), (Requirement("tier", "In", ("a", "b")),), None),
        (
            (),
            (Requirement("service", "In", ("{{.bad-value.}}",)),),
            f'values[0][service]: Invalid value: "{{{{.bad-value.}}}}": {VALUE_MSG}',
        ),
        ((("app", "bad value"),), (), f'values[0][app]: Invalid value: "bad value": {VALUE_MSG}'),
        ((), (Requirement("-x", "Exists"),), f'key: Invalid value: "-x": {KEY_NAME_MSG}'),
        ((), (Requirement("x", "Foo"),), '"Foo" is not a valid label selector operator'),
        (
            (),
            (Requirement("x", "In"),),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            (),
            (Requirement("x", "Exists", ("a",)),),
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
        ),
        (
            (),
            (Requirement("-x", "In"),),
            f"[key: Invalid value: \"-x\": {KEY_NAME_MSG}, values: Invalid value: null: for 'in', 'notin' "
            "operators, values set can't be empty]",
        ),
        # the first requirement that does not parse is the error
        (
            (),
            (Requirement("x", "In", ("ok",)), Requirement("y", "Foo"), Requirement("-z", "Exists")),
            '"Foo" is not a valid label selector operator',
        ),
    ],
)
def test_selector_errors_as_kube_words_them(labels: tuple, exprs: tuple, want: str | None) -> None:
    """apimachinery's LabelSelectorAsSelector and labels.NewRequirement (field.Error, utilerrors aggregate)."""
    assert selector_error(LabelSelector(labels, exprs)) == want
