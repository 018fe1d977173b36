"""Fixtures for the model tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.model_wire import WireServer, serving


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    """A local server speaking whatever the test's canned responses say."""
    with serving() as server:
        yield server
