"""The filesystem conformance suite (``filesystems.testing``), run against every filesystem mode
and store of the package (``filesystem_case`` in conftest.py)."""

from __future__ import annotations

from filesystems.testing import FilesystemConformance


class TestFilesystems(FilesystemConformance):
    """Every mode in ``conftest.MODES``."""
