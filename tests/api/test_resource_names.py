"""kube's resource-name classes (pkg/apis/core/v1/helper), which decide what NodeResourcesFit checks,
scores and ignores."""

from __future__ import annotations

import pytest

from berth.core.api.core.resources import is_extended, is_native, is_scalar, is_tracked


@pytest.mark.parametrize(
    ("name", "want"),
    [
        # TestIsNativeResource (kubernetes pkg/apis/core/v1/helper/helpers_test.go)
        ("pod.alpha.kubernetes.io/opaque-int-resource-foo", True),
        ("kubernetes.io/resource-foo", True),
        ("foo", True),
        ("a/b", False),
        ("", True),
    ],
)
def test_is_native(name: str, want: bool) -> None:
    assert is_native(name) is want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        # TestIsExtendedResourceName (kube's helpers_test.go of the same helper, as kube-state-metrics keeps it)
        ("pod.alpha.kubernetes.io/opaque-int-resource-foo", False),
        ("kubernetes.io/resource-foo", False),
        ("foo", False),
        ("a/b", True),
        ("requests.foobar", False),
        ("c/d/", False),
        ("", False),
        # the qualified-name check once "requests." is put before the name
        ("example.com/gpu", True),
        ("requests.example.com/gpu", False),
        ("Example.com/gpu", False),  # the prefix must be a lowercase DNS subdomain
        ("example.com/" + "x" * 64, False),  # the name part: at most 63 characters
        ("example.com/-gpu", False),
    ],
)
def test_is_extended(name: str, want: bool) -> None:
    assert is_extended(name) is want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("example.com/gpu", True),  # extended
        ("hugepages-2Mi", True),
        ("attachable-volumes-aws-ebs", True),
        ("kubernetes.io/foo", True),  # prefixed native
        ("cpu", False),
        ("memory", False),
        ("ephemeral-storage", False),
        ("pods", False),
        ("foo", False),  # no domain, not one of kube's: neither native-four nor scalar
        ("c/d/", False),
    ],
)
def test_is_scalar(name: str, want: bool) -> None:
    assert is_scalar(name) is want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("cpu", True),
        ("memory", True),
        ("ephemeral-storage", True),
        ("pods", False),  # kube's allowed pod number, compared on its own
        ("example.com/gpu", True),
        ("hugepages-2Mi", True),
        ("foo", False),
    ],
)
def test_is_tracked(name: str, want: bool) -> None:
    assert is_tracked(name) is want
