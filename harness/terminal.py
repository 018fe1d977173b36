"""Making untrusted text inert before it is shown to an operator in a terminal."""

from __future__ import annotations

import re
import sys
from typing import TextIO

__all__ = ["echo", "escape_control"]

# C0 controls except tab and newline, DEL and C1 controls (U+0080-U+009F, which some terminals
# read as CSI/OSC introducers); ESC is C0, so no escape sequence keeps its start. Bidirectional
# overrides and isolates are escaped too: they reorder what the operator sees.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_control(text: str) -> str:
    """``text`` with every control character but newline and tab written as ``\\xNN`` (or
    ``\\uNNNN`` for the bidirectional controls).

    Use it on anything a skill, draft, market or model wrote before printing it to a terminal:
    escape sequences can then neither hide nor rewrite what the operator reads.
    """
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def echo(text: object = "", *, end: str = "\n", file: TextIO | None = None) -> None:
    """``print`` for text that may carry what a skill, market, draft or model wrote: control
    characters are escaped first (see :func:`escape_control`)."""
    print(escape_control(str(text)), end=end, file=file if file is not None else sys.stdout)
