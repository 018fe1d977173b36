"""MkDocs hook: pages generated from the code, so they cannot drift from it.

``<!-- cli-reference -->`` in a page becomes one section per ``harness`` command, read from the
argparse parsers ``harness.cli.build_parser()`` builds: its usage, description and every option.
A command registered without a help line, or an option without help, fails the build, so
neither can ship undocumented.

``<!-- config-reference -->`` becomes a table of every ``harness.yaml`` key (nested sections as
dotted paths) with its type, default and description, read from the schema the loader checks
(``harness.config.json_schema()``). A key without a description fails the build.
"""

from __future__ import annotations

import argparse
from typing import Any

from mkdocs.exceptions import PluginError

CLI_MARKER = "<!-- cli-reference -->"
CONFIG_MARKER = "<!-- config-reference -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the markers of generated sections in ``markdown``."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, config_reference())
    return markdown


def config_reference() -> str:
    """Markdown: one row per ``harness.yaml`` key, nested sections as dotted paths."""
    from harness.config import json_schema

    schema = json_schema()
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    rows += _config_rows(schema["properties"], schema.get("$defs", {}), "")
    return "\n".join(rows) + "\n"


def _config_rows(properties: dict[str, Any], defs: dict[str, Any], prefix: str) -> list[str]:
    rows: list[str] = []
    for key, spec in properties.items():
        path = f"{prefix}{key}"
        description = spec.get("description")
        if not description:
            raise PluginError(f"harness.yaml key {path!r} has no description in the schema")
        default = spec.get("default", "—")
        shown = "—" if default == "—" else f"`{_escape(repr(default) if isinstance(default, str) else str(default))}`"
        rows.append(f"| `{path}` | {_type(spec, defs)} | {shown} | {_escape(description)} |")
        for ref in _refs(spec):
            section = defs[ref.rsplit("/", 1)[1]]
            rows += _config_rows(section.get("properties", {}), defs, f"{path}.")
    return rows


def _refs(spec: dict[str, Any]) -> list[str]:
    found = [spec["$ref"]] if "$ref" in spec else []
    for option in spec.get("anyOf", []):
        found += _refs(option)
    if isinstance(spec.get("items"), dict):
        found += _refs(spec["items"])
    return found


def _type(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in spec:
        return "mapping"
    if "anyOf" in spec:
        return " or ".join(dict.fromkeys(_type(option, defs) for option in spec["anyOf"]))
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type(spec.get('items', {}), defs)}"
    if kind == "object":
        return "mapping"
    return {"string": "text", "integer": "integer", "number": "number", "boolean": "true/false", "null": "null"}.get(
        kind, str(kind)
    )


def cli_reference() -> str:
    """Markdown for every command of the ``harness`` parser, in registration order."""
    from harness.cli import build_parser

    sections: list[str] = []
    for path, parser, help_text in _commands(build_parser(), ["harness"]):
        if not help_text:
            raise PluginError(f"'{' '.join(path)}' has no help text: give it help= where it is registered")
        if _subcommands(parser) is None:
            sections.append(_section(path, parser, help_text))
    return "\n".join(sections)


def _commands(
    parser: argparse.ArgumentParser, path: list[str]
) -> list[tuple[list[str], argparse.ArgumentParser, str | None]]:
    found: list[tuple[list[str], argparse.ArgumentParser, str | None]] = []
    action = _subcommands(parser)
    if action is None:
        return found
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    for name, child in action.choices.items():
        found.append(([*path, name], child, helps.get(name)))
        found.extend(_commands(child, [*path, name]))
    return found


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _section(path: list[str], parser: argparse.ArgumentParser, help_text: str) -> str:
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines = [f"### `{' '.join(path)}`", "", _sentence(help_text), ""]
    if parser.description and parser.description.strip() != help_text.strip():
        lines += [_escape(parser.description.strip()), ""]
    lines += ["```text", usage, "```", ""]
    formatter = parser._get_formatter()
    actions = [action for action in parser._actions if not isinstance(action, argparse._HelpAction)]
    for action in actions:
        if not action.help and not isinstance(action, argparse._SubParsersAction):
            name = ", ".join(action.option_strings) or action.dest
            raise PluginError(f"'{' '.join(path)}' option {name} has no help text: give it help=")
    rows = [_row(action, formatter) for action in actions]
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def _row(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs != 0:
            names += f" {action.metavar or action.dest.upper()}"
    else:
        names = str(action.metavar or action.dest)
    meaning = _escape(formatter._expand_help(action) if action.help else "")
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        meaning += f" (one of: {', '.join(f'`{choice}`' for choice in action.choices)})"
    if action.default not in (None, False, argparse.SUPPRESS, [], ()) and action.nargs != 0:
        meaning += f" (default: `{action.default}`)"
    return f"| `{names}` | {meaning.strip() or '—'} |"


def _sentence(text: str) -> str:
    text = _escape(text.strip())
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _escape(text: str) -> str:
    """Text safe in a Markdown table cell and outside code: pipes, angle brackets, newlines."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
