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
    followed by a note saying how to continue when more is left."""
    lines = text.splitlines(keepends=True)
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
        page += f"\n[showing lines {start + 1}-{end} of {len(lines)}; continue with offset={end + 1}]"
    return page
