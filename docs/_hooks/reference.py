"""MkDocs hook: pages generated from the code, so they cannot drift from it.

``<!-- cli-reference -->`` in a page becomes one section per ``harness`` command, read from the
argparse parsers ``harness.cli.build_parser()`` builds: its usage, description and every option.
A command registered without a help line fails the build, so a new command cannot ship
undocumented.
"""

from __future__ import annotations

import argparse
from typing import Any

from mkdocs.exceptions import PluginError

CLI_MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the markers of generated sections in ``markdown``."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown


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
    rows = [_row(action, formatter) for action in parser._actions if not isinstance(action, argparse._HelpAction)]
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
