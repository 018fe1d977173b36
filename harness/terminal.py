"""Making untrusted text inert before it is shown to an operator in a terminal."""

from __future__ import annotations

import re
import sys
from typing import TextIO

__all__ = ["echo", "escape_control", "escape_line"]

# Every character of Unicode's control (Cc), format (Cf) and line/paragraph separator (Zl, Zp)
# categories but tab and newline: C0 and C1 controls (ESC and U+009B start every escape sequence:
# cursor moves, clearing the screen, OSC 8 links, OSC 52 clipboard writes), carriage return and
# backspace (they overwrite what is shown), the bidirectional marks, overrides and isolates (they
# reorder it), and the invisible rest (zero-width characters, the byte order mark, tag letters).
# Written out because Python's ``re`` has no category classes; the Egyptian format controls are
# those of Unicode 15 (``tests/security/test_terminal_output.py`` checks the table against the
# Unicode database).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_CONTROL_OR_NEWLINE = re.compile(f"\n|{_CONTROL.pattern}")


def escape_control(text: str) -> str:
    """``text`` with every control, format and separator character but newline and tab written
    as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``.

    Use it on anything a skill, draft, market or model wrote before printing it to a terminal:
    escape sequences can then neither hide, rewrite, reorder nor link what the operator reads.
    """
    return _CONTROL.sub(_escaped, text)


def escape_line(text: str) -> str:
    """:func:`escape_control`, with newlines written ``\\n`` too: for what is shown as one line
    (a name, a description, a diagnostic, an event, the progress line), so text an untrusted
    source wrote cannot start a line of its own that passes for the harness's."""
    return _CONTROL_OR_NEWLINE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def echo(text: object = "", *, end: str = "\n", file: TextIO | None = None) -> None:
    """``print`` for text that may carry what a skill, market, draft or model wrote: control
    characters are escaped first (see :func:`escape_control`)."""
    print(escape_control(str(text)), end=end, file=file if file is not None else sys.stdout)
