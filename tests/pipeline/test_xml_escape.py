"""The catalog's XML escaping writes what the standard library's ``xml.sax.saxutils`` writes
(which the catalog no longer imports: it loads ``urllib.request``, ``http`` and ``email``)."""

from __future__ import annotations

from xml.sax.saxutils import escape as sax_escape
from xml.sax.saxutils import quoteattr as sax_quoteattr

from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.catalog import escape, quoteattr

# Text rich in the characters that are escaped, so most examples hold several of them.
MARKUP = st.text(alphabet=st.sampled_from("&<>\"'\n\r\tab;#é\u2028 "), max_size=40) | st.text(max_size=40)


@given(MARKUP)
def test_escape_matches_the_standard_library(text: str) -> None:
    assert escape(text) == sax_escape(text)


@given(MARKUP)
def test_escape_with_entities_matches_the_standard_library(text: str) -> None:
    entities = {'"': "&quot;", "'": "&apos;"}
    assert escape(text, entities) == sax_escape(text, entities)


@given(MARKUP)
def test_quoteattr_matches_the_standard_library(text: str) -> None:
    assert quoteattr(text) == sax_quoteattr(text)


def test_an_attribute_with_both_quotes_uses_double_quotes_and_escapes_them() -> None:
    assert quoteattr("""a "b" 'c' <d>""") == "\"a &quot;b&quot; 'c' &lt;d&gt;\""
