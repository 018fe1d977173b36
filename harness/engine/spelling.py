"""How the native and the Comet layouts spell file names and keys (for parsing and messages)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.skills.skill import COMET_FILES, NATIVE_FILES

__all__ = ["COMET", "COMET_FILES", "EVALS_FILES", "NATIVE", "NATIVE_FILES", "Spelling"]

#: Comet's other name for the runtime checks file, one per layout (native, Comet); a package
#: holds either it or the checks file, never both.
EVALS_FILES = ("evals.yaml", "comet/evals.yaml")


@dataclass(frozen=True, kw_only=True)
class Spelling:
    """One layout: its file names, how it spells native keys, whether unknown keys are errors."""

    format: str
    definition_file: str
    guardrails_file: str
    checks_file: str
    evals_file: str
    checks_key: str
    strict: bool
    renames: Mapping[str, str] = field(default_factory=dict)

    def key(self, native: str, context: str = "") -> str:
        """The file's spelling of the native key ``native`` inside ``context`` (``step``, ``action``)."""
        renamed = self.renames.get(f"{context}.{native}") or self.renames.get(native)
        if renamed:
            return renamed
        if self.format == "native":
            return native
        head, *rest = native.split("_")
        return head + "".join(part.capitalize() for part in rest)

    def step_path(self, index: int, *keys: str) -> str:
        """The field path of step ``index``, optionally down into its keys (``action``, ``ref``)."""
        path = f"orchestration.steps[{index}]"
        context = "step"
        for key in keys:
            path = f"{path}.{self.key(key, context)}"
            context = key
        return path


NATIVE = Spelling(
    format="native",
    definition_file=NATIVE_FILES[0],
    guardrails_file=NATIVE_FILES[1],
    checks_file=NATIVE_FILES[2],
    evals_file=EVALS_FILES[0],
    checks_key="checks",
    strict=True,
)
COMET = Spelling(
    format="comet",
    definition_file=COMET_FILES[0],
    guardrails_file=COMET_FILES[1],
    checks_file=COMET_FILES[2],
    evals_file=EVALS_FILES[1],
    checks_key="runtime",
    strict=False,
    renames={
        "step.completion_checks": "completionEvals",
        "action.instructions": "prompt",
        "action.to": "ref",
    },
)
