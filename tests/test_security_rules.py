"""Every rule of the trust model (``SECURITY.md``) names the attack suites that hold it, and each
suite it names exists and holds tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RULE = re.compile(r"^(\d+)\. \*\*(.+?)\*\*", re.M)
_SUITE = re.compile(r"`(tests/[\w/]+\.py)`")


def _rules() -> dict[int, tuple[str, str]]:
    """Each numbered rule's title and text, by number."""
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    starts = list(_RULE.finditer(text))
    ends = [m.start() for m in starts[1:]] + [text.find("\n## ", starts[-1].start())]
    return {int(m.group(1)): (m.group(2), text[m.start() : end]) for m, end in zip(starts, ends, strict=True)}


def test_the_rules_are_numbered_in_order_and_cover_environments_and_session_stores() -> None:
    rules = _rules()
    assert list(rules) == list(range(1, len(rules) + 1))
    titles = " ".join(title for title, _ in rules.values())
    assert "environments" in titles and "Session stores" in titles


def test_every_rule_names_attack_suites_that_exist_and_hold_tests() -> None:
    for number, (_, text) in _rules().items():
        _, found, attacks = text.partition("Attacks:")
        suites = _SUITE.findall(attacks)
        assert found and suites, f"rule {number} names no attack suite"
        for suite in suites:
            path = ROOT / suite
            assert path.is_file(), f"rule {number} names {suite}, which does not exist"
            assert re.search(r"^(async )?def test_", path.read_text(encoding="utf-8"), re.M), suite
