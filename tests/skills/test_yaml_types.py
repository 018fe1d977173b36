"""The plain-scalar typing written out for the frontmatter fast path types every scalar exactly as
PyYAML's ``SafeLoader`` does: the same tag from its resolver, the same value from ``safe_load``."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.skills.frontmatter import _BOOLEANS, _MISSING, _STR_TAG, _implicit_tag, _scalar, _simple_mapping
from tests.support.sizing import sized

_RESOLVER = yaml.resolver.Resolver()

# Scalars near every edge of the YAML 1.1 types: signs, bases, underscores, exponents,
# sexagesimal parts, dates with and without times and zones, the boolean and null words.
EDGES = [
    *_BOOLEANS,
    *("yes ", "Yes.", "yES", "tRUE", "oN", "y", "Y", "n", "N", "ON ", "offf", "nO"),
    *("", "~", "null", "Null", "NULL", "nULL", "nul", "None", "~~"),
    *("0_7", "0_", "-0_1", "0_8", "1_", "1__0", "0b_", "0x_", "0b", "0x", "+_1", "1:_0", "1_:20", "1.0e5_"),
    *("0", "-0", "+0", "00", "07", "08", "0o7", "0b101", "-0b1_0", "0b2", "0x1F", "+0x_f", "0xg", "0X1"),
    *("1", "12_345", "1__", "_1", "-1", "+-1", "1:20", "1:60", "1:5:59", "01:20", "0:20", "190:20:30", "1:2:"),
    *("1.0", "1.", ".5", "-.5", "+.5", "1e5", "1.0e5", "1.0e+5", "1.0E-05", "1.e+5", "._5", "1_0.0_1", "1:20.5"),
    *("01:20.5", "-1:20.5", ".inf", "-.inf", "+.Inf", ".INF", ".iNf", ".nan", ".NaN", "-.nan", ".NAN", ".", "-", "+"),
    *("2024-01-01", "2024-1-1", "2024-01-1", "20240-01-01", "2024-01-01T10:00:00", "2024-1-1 1:00:00"),
    *("2024-01-01t10:00:00.5Z", "2024-01-01 10:00:00 +5", "2024-01-01 10:00:00-05:30", "2024-01-01T10:00"),
    *("2024-01-01  \t10:00:00.123 Z", "2024-01-01 10:00:00 +5:3", "2024-01-01x", "2024-01-01 "),
    *("<<", "<", "<<<", "=", "==", "!", "&", "*", "!!", "a", "text", "٣", "١٢", "1٢", "²", "1.5 kg", "v1.0"),
]

_NUMERIC = st.sampled_from(list("0123456789_.:+-eExXbaf"))
_CHARS = st.sampled_from(list("0123456789+-._:eExXbBoO ntyfaiNTYFAIlrsuL~<=!&*Zz\t"))


def _yaml_tag(value: str) -> str:
    return str(_RESOLVER.resolve(yaml.ScalarNode, value, (True, False)))


@pytest.mark.parametrize("value", EDGES)
def test_a_scalar_gets_the_tag_pyyaml_gives_it(value: str) -> None:
    assert _implicit_tag(value) == _yaml_tag(value)


@settings(max_examples=sized(1500, full=20000), deadline=None)
@given(
    st.text(_CHARS, max_size=14)
    | st.text(_NUMERIC, min_size=1, max_size=10)
    | st.sampled_from(EDGES).flatmap(lambda e: st.just(e) | st.text(_CHARS, max_size=3).map(e.__add__))
)
def test_any_scalar_gets_the_tag_pyyaml_gives_it(value: str) -> None:
    assert _implicit_tag(value) == _yaml_tag(value)


@settings(max_examples=sized(1000, full=20000), deadline=None)
@given(st.sampled_from(EDGES) | st.text(_CHARS, max_size=12) | st.text(_NUMERIC, min_size=1, max_size=10))
def test_every_value_the_fast_path_types_is_what_safe_load_gives(value: str) -> None:
    text = f"k: {value}\n"
    fast = _simple_mapping(text)
    if fast is None:
        return  # left to the YAML path
    expected = yaml.load(text, Loader=yaml.SafeLoader)["k"]
    assert (type(fast[0]["k"]), fast[0]["k"]) == (type(expected), expected)


def test_the_fast_path_types_booleans_and_null_and_leaves_numbers_and_dates_to_yaml() -> None:
    assert (_scalar("Yes", as_text=False), _scalar("OFF", as_text=False), _scalar("~", as_text=False)) == (
        True,
        False,
        None,
    )
    assert [_scalar(v, as_text=False) is _MISSING for v in ("1", "1.0", ".inf", "2024-01-01", "<<")] == [True] * 5
    assert _implicit_tag("plain words") == _STR_TAG
