"""The SKILL.md model: frontmatter parsing, the spec's rules and validation. Pure: no I/O
beyond reading the folders ``validate`` is pointed at."""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness.skills.arguments import MAX_ARGUMENTS, MAX_EXPANDED, ArgumentsTooLarge
from harness.skills.bounded_yaml import YAMLLimitExceeded, load_bounded_yaml
from harness.skills.frontmatter import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_FRONTMATTER_BYTES,
    TEXT_FIELDS,
    Frontmatter,
    FrontmatterError,
    split_frontmatter,
)
from harness.skills.rules import (
    ALLOWED_FIELDS,
    MAX_COMPATIBILITY_LENGTH,
    MAX_DESCRIPTION_LENGTH,
    MAX_NAME_LENGTH,
    Problem,
    check_fields,
    check_name,
    unsafe_name_reason,
    unsafe_segment_reason,
)
from harness.skills.skill import Layer, Skill, load_skill

if TYPE_CHECKING:  # strict validation (``harness skills validate``) loads on first use
    from harness.skills.validation import (
        SKILL_MD_NAMES,
        FoundSkillDirs,
        ValidationReport,
        discover_skill_dirs,
        find_skill_dirs,
        find_skill_md,
        validate_skill_dir,
    )

__all__ = [
    "ALLOWED_FIELDS",
    "MAX_ALIASES",
    "MAX_ARGUMENTS",
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DEPTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_EXPANDED",
    "MAX_FRONTMATTER_BYTES",
    "MAX_NAME_LENGTH",
    "SKILL_MD_NAMES",
    "TEXT_FIELDS",
    "ArgumentsTooLarge",
    "FoundSkillDirs",
    "Frontmatter",
    "FrontmatterError",
    "Layer",
    "Problem",
    "Skill",
    "ValidationReport",
    "YAMLLimitExceeded",
    "check_fields",
    "check_name",
    "discover_skill_dirs",
    "find_skill_dirs",
    "find_skill_md",
    "load_bounded_yaml",
    "load_skill",
    "split_frontmatter",
    "unsafe_name_reason",
    "unsafe_segment_reason",
    "validate_skill_dir",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use
