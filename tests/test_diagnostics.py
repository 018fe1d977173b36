"""Diagnostic constructors: one per severity, secrets masked like the plain constructor."""

from __future__ import annotations

import pytest

from harness import Diagnostic


@pytest.mark.parametrize("severity", ["error", "warning", "info"])
def test_each_severity_has_a_constructor(severity: str) -> None:
    made = getattr(Diagnostic, severity)("some-code", "what happened", "/ws/skills/x")
    assert made == Diagnostic(severity=severity, code="some-code", message="what happened", location="/ws/skills/x")  # type: ignore[arg-type]


def test_the_constructors_mask_credentials() -> None:
    made = Diagnostic.warning("market-down", "cannot reach mysql://bob:hunter2@db/skills")
    assert "hunter2" not in made.message and "hunter2" not in str(made)
