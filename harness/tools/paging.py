"""Line paging for tools that return file contents to a model."""

from __future__ import annotations

__all__ = ["MAX_LINES", "MAX_PAGE_BYTES", "looks_binary", "page_lines"]

MAX_LINES = 2000
MAX_PAGE_BYTES = 50 * 1024


def looks_binary(data: bytes) -> bool:
    """A NUL byte near the start, or bytes that are not UTF-8."""
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def page_lines(text: str, name: str, offset: int = 1, limit: int | None = None) -> str:
    """Lines ``offset``… of ``text`` (1-based), at most ``limit`` (≤ 2000) lines and 50 KB,
    followed by a note saying how to continue when more is left.

    A line longer than 50 KB counts as several lines of at most 50 KB each (split at character
    boundaries), so one huge line is paged like many and every offset stays within the limit.
    """
    lines = _split_long_lines(text.splitlines(keepends=True))
    start = max(offset, 1) - 1
    if start >= len(lines) and lines:
        raise ValueError(f"offset {offset} is past the end of {name} ({len(lines)} lines)")
    chosen: list[str] = []
    size = 0
    for line in lines[start : start + min(limit or MAX_LINES, MAX_LINES)]:
        size += len(line.encode())
        if size > MAX_PAGE_BYTES and chosen:
            break
        chosen.append(line)
    end = start + len(chosen)
    page = "".join(chosen)
    if end < len(lines):
        split = "" if page.endswith("\n") else "; the last line continues on the next page"
        page += f"\n[showing lines {start + 1}-{end} of {len(lines)}{split}; continue with offset={end + 1}]"
    return page


def _split_long_lines(lines: list[str]) -> list[str]:
    if all(len(line) <= MAX_PAGE_BYTES // 4 for line in lines):  # cannot exceed the limit in UTF-8
        return lines
    result: list[str] = []
    for line in lines:
        data = line.encode()
        if len(data) <= MAX_PAGE_BYTES:
            result.append(line)
            continue
        start = 0
        while start < len(data):
            end = min(start + MAX_PAGE_BYTES, len(data))
            while end < len(data) and data[end] & 0xC0 == 0x80:  # not inside a UTF-8 sequence
                end -= 1
            result.append(data[start:end].decode())
            start = end
    return result
