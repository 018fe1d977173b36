"""Five public-collection-sized git markets in ``tmp_path``: 180 skill folders, 177 served after
three same-name skills across markets are shadowed, with long descriptions (150–1,000
characters) and slugs as long as real ones (``git-<owner>-remote-main``, about 45 characters).

The names and texts are generated from a seeded word list, so every run builds the same markets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from repositories import GitRepository
from tests.support.git import GitRemote
from tests.support.skills import make_skill

__all__ = ["FIVE_MARKETS", "SHADOWED", "Market", "build_markets", "open_markets"]

#: (owner folder, skill count) of each market in registration order (a later one wins a clash).
FIVE_MARKETS: tuple[tuple[str, int], ...] = (
    ("northwind-agent-skills-collection", 41),
    ("acme-labs-skills-for-claude", 35),
    ("acme-tools-skills-for-agents", 35),
    ("contoso-superpowers-skill-pack", 35),
    ("fabrikam-research-skill-library", 34),
)
#: Skills two markets both have: name -> (the shadowed market's index, the winner's index).
SHADOWED: dict[str, tuple[int, int]] = {"skill-creator": (0, 3), "pdf": (1, 2), "brainstorming": (3, 4)}

_TOPICS = (
    "invoice spreadsheet slide-deck changelog release-notes api-schema database-migration css-theme "
    "test-suite incident-report onboarding-guide survey-results budget-forecast contract-review "
    "meeting-minutes design-tokens docker-image terraform-plan pull-request commit-message "
    "sql-query data-pipeline chart poster email-campaign brand-guide accessibility-audit "
    "translation podcast-script research-paper citation dataset notebook dashboard"
).split()
_ACTIONS = "writer reviewer builder checker planner formatter analyst converter helper linter".split()
_WORDS = (
    "the user asks to create edit review summarise convert check plan draft a report document "
    "file project team workflow with clear steps examples templates scripts that validate output "
    "format structure tone audience deadlines tables figures references sources and keep changes "
    "small consistent readable when working on tasks about data code design content quality"
).split()


@dataclass(frozen=True)
class Market:
    """One generated market: its remote and the skills it holds (name -> description)."""

    remote: GitRemote
    skills: dict[str, str]


def build_markets(base: Path) -> list[Market]:
    """Create and push the five markets below ``base``."""
    rng = random.Random(177)
    names = iter(f"{topic}-{action}" for action in _ACTIONS for topic in _TOPICS)
    markets: list[Market] = []
    for index, (owner, count) in enumerate(FIVE_MARKETS):
        remote = GitRemote(base / owner)
        shared = [name for name, pair in SHADOWED.items() if index in pair]
        skills = {
            name: _description(rng, name) for name in [*shared, *(next(names) for _ in range(count - len(shared)))]
        }
        for name, description in skills.items():
            make_skill(
                remote.work / "skills",
                name,
                description=description,
                body=f"# {name}\n\nFrom {owner}. Run `python3 scripts/run.py`.\n",
                files={"scripts/run.py": f"print({owner!r})\n"},
            )
        remote.commit(f"{count} skills")
        markets.append(Market(remote=remote, skills=skills))
    return markets


def open_markets(markets: list[Market], cache: Path) -> list[GitRepository]:
    """The markets as git repositories (not entered yet), each with its own clone cache."""
    return [GitRepository(m.remote.url, branch="main", cache_dir=cache / str(i)) for i, m in enumerate(markets)]


def _description(rng: random.Random, name: str) -> str:
    """A description of 150–1,000 characters, YAML-safe on one line."""
    target = rng.randint(150, 1000)
    text = f"Use when the user works on {name.replace('-', ' ')}."
    while len(text) < target:
        text += " " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
    return text[:target].rstrip(" .") + "."
