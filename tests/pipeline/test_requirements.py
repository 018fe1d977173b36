"""Reading what a skill's files say it needs, and inferring it from imports, without running them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.requirements import (
    MAX_PARSED,
    MAX_PROBLEMS,
    MAX_READ,
    MAX_REQUIREMENTS,
    _metadata_blocks,
    check_requirement,
    files_to_read,
    infer_imports,
    read_requirements,
)

PEP723_SHEET = b'# /// script\n# dependencies = ["hxsheet"]\n# ///\n'


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("pypdf", "pypdf"),
        ("Py_YAML >= 6.0", "py-yaml>=6.0"),
        ("Pandas[Excel, perf] >= 2.0, <3", "pandas[excel,perf]<3,>=2.0"),
        ("pkg (>=1.0)", "pkg>=1.0"),
        ('openpyxl ; python_version >= "3.9"', 'openpyxl; python_version >= "3.9"'),
    ],
)
def test_a_requirement_is_checked_and_put_in_canonical_form(text: str, canonical: str) -> None:
    assert check_requirement(text)[0] == canonical


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("-e .", "option"),
        ("--index-url https://mirror.example/simple", "option"),
        ("pkg @ https://example.org/pkg.whl", "URL or a path"),
        ("file:///tmp/pkg.whl", "URL or a path"),
        ("/tmp/pkg-1.0-py3-none-any.whl", "URL or a path"),
        ("./vendor/pkg", "URL or a path"),
        ("pkg --hash=sha256:00", "not a requirement"),
        ("vendor/pkg", "not a requirement"),
        ("pkg; __import__('os').system('id')", "not PEP 508"),
    ],
)
def test_options_urls_paths_and_odd_markers_are_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_requirement(text)


@given(st.text(max_size=80))
def test_whatever_is_accepted_names_no_url_path_or_option(text: str) -> None:
    try:
        canonical, name = check_requirement(text)
    except ValueError:
        return
    assert not canonical.startswith("-") and "@" not in canonical and "/" not in canonical
    assert canonical.startswith(name)


def test_pep723_requirements_txt_and_pyproject_are_read_with_their_origin() -> None:
    script = b'#!/usr/bin/env python3\n# /// script\n# requires-python = ">=3.10"\n# dependencies = [\n#   "pypdf>=4",\n# ]\n# ///\n'
    found = read_requirements(
        {
            "scripts/fill.py": script,
            "scripts/plain.py": b"import os\n",
            "requirements.txt": b"# needed\nopenpyxl>=3  # sheets\nrich \\\n  >=13\n\n",
            "pyproject.toml": b'[project]\nname = "x"\ndependencies = ["psutil"]\n',
        }
    )
    assert [(r.text, r.source, r.origin) for r in found.requirements] == [
        ("psutil", "pyproject.toml", "pyproject.toml"),
        ("openpyxl>=3", "requirements.txt", "requirements.txt"),
        ("rich>=13", "requirements.txt", "requirements.txt"),
        ("pypdf>=4", "pep723", "scripts/fill.py"),
    ]
    assert found.problems == ()


def test_broken_metadata_is_a_problem_not_an_error() -> None:
    twice = b'# /// script\n# dependencies = ["a"]\n# ///\n# /// script\n# dependencies = ["b"]\n# ///\n'
    found = read_requirements(
        {
            "a.py": twice,
            "b.py": b'# /// script\n# dependencies = "pypdf"\n# ///\n',
            "pyproject.toml": b"[project\n",
            "requirements.txt": b"\xff\xfe",
        }
    )
    assert found.requirements == ()
    assert [p.split(":")[0] for p in found.problems] == ["a.py", "b.py", "pyproject.toml", "requirements.txt"]


def test_inference_maps_known_imports_and_reports_the_rest() -> None:
    script = (
        b"import os, sys, json\nimport yaml\nfrom PIL import Image\nimport pandas as pd\nfrom docx.shared import Pt\n"
        b"import helpers\nfrom lib.tool import x\nfrom . import sibling\nimport frobnicator\nimport cv2\n"
    )
    inferred = infer_imports(
        {"scripts/go.py": script, "scripts/helpers.py": b"", "scripts/lib/tool.py": b""},
        ["scripts/go.py", "scripts/helpers.py", "scripts/lib/tool.py"],
        declared=["pandas"],
    )
    assert sorted(r.text for r in inferred.requirements) == [
        "opencv-python-headless",
        "pillow",
        "python-docx",
        "pyyaml",
    ]
    assert inferred.unknown == ("frobnicator",)


@pytest.mark.parametrize("script", [b"import (\n", b"-" * 300_000 + b"1\n", b"a" + b".a" * 300_000 + b"\n"])
def test_a_script_that_does_not_parse_infers_nothing(script: bytes) -> None:
    assert infer_imports({"x.py": script}, ["x.py"]).requirements == ()


def test_hostile_toml_nesting_is_a_problem() -> None:
    found = read_requirements({"pyproject.toml": b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"})
    assert found.requirements == () and found.problems[0].startswith("pyproject.toml: invalid TOML")


@pytest.mark.parametrize(
    "text",
    [
        "--extra-index-url http://127.0.0.1:9/simple",
        "--index-url=http://127.0.0.1:9/simple",
        "-i http://127.0.0.1:9/simple",
        "-c constraints.txt",
        "--constraint constraints.txt",
        "-r other.txt",
        "--requirement=other.txt",
        "-f /tmp/wheels",
        "--find-links=/tmp/wheels",
        "--trusted-host 127.0.0.1",
        "--pre",
        "--no-binary :all:",
        "--only-binary=:none:",
        "--config-settings editable_mode=compat",
        "-e git+https://127.0.0.1:9/evil.git#egg=evil",
        "git+https://127.0.0.1:9/evil.git",
        "evil @ git+https://127.0.0.1:9/evil.git",
        "evil@git+ssh://git@127.0.0.1/evil.git",
        "hg+https://127.0.0.1:9/evil",
        "file:///tmp/evil-1.0-py3-none-any.whl",
        "evil @ file:///tmp/evil",
        "./evil",
        "../evil",
        "~/evil",
        "/tmp/evil.tar.gz",
        "C:\\evil",
        "evil.whl --pre",
        "hxsheet --index-url=http://127.0.0.1:9/simple",
        "hxsheet\n--index-url http://127.0.0.1:9/simple",
        "hxsheet ; python_version >= '3' --pre",
    ],
)
def test_installer_options_and_path_url_or_vcs_requirements_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        check_requirement(text)


def test_a_name_that_looks_like_a_file_reaches_uv_as_a_name() -> None:
    # uv reads an argument ending in .whl or .tar.gz as a path: the canonical form has no dots.
    assert check_requirement("evil-1.0-py3-none-any.whl") == ("evil-1-0-py3-none-any-whl",) * 2
    assert check_requirement("evil.tar.gz")[0] == "evil-tar-gz"


@pytest.mark.parametrize(
    "module",
    [
        "reqeusts",  # a typo of a known name
        "requests_",
        "Yaml",  # import names are case-sensitive: not PyYAML's
        "yaml2",
        "_yaml",
        "PIL_",
        "sklearnn",
        "scikit_learn",
        "beautifulsoup4",  # a distribution name is not an import name
        "pyyaml",
        "json5",  # looks like the standard library's json
        "asyncio_compat",
        "os2",
    ],
)
def test_an_import_that_is_not_in_the_curated_map_is_reported_never_guessed(module: str) -> None:
    inferred = infer_imports({"go.py": f"import {module}\n".encode()}, ["go.py"])
    assert inferred.requirements == () and inferred.unknown == (module,)


@pytest.mark.parametrize(
    ("module", "distribution"),
    [
        ("sklearn", "scikit-learn"),  # not the "sklearn" project
        ("yaml", "pyyaml"),
        ("jwt", "pyjwt"),  # not the "jwt" project
        ("serial", "pyserial"),  # not the "serial" project
        ("fitz", "pymupdf"),  # not the "fitz" project
        ("attr", "attrs"),
        ("dateutil", "python-dateutil"),
    ],
)
def test_aliased_imports_map_to_the_distribution_that_provides_them(module: str, distribution: str) -> None:
    inferred = infer_imports({"go.py": f"import {module}.sub\n".encode()}, ["go.py"])
    assert [r.text for r in inferred.requirements] == [distribution]


def test_a_standard_library_import_is_never_a_requirement() -> None:
    script = "".join(f"import {name}\n" for name in ("os", "json", "asyncio", "sqlite3", "tomllib", "__future__"))
    assert infer_imports({"go.py": script.encode()}, ["go.py"]) == infer_imports({}, [])


def test_a_very_long_line_is_refused_quickly_and_named_briefly() -> None:
    line = "hxsheet>=1" + " " * 900_000 + "x"
    with pytest.raises(ValueError, match="longer than") as refused:
        check_requirement(line)
    assert len(str(refused.value)) < 300
    found = read_requirements({"requirements.txt": (line + "\n").encode()})
    assert found.requirements == () and len(found.problems) == 1 and len(found.problems[0]) < 300


@pytest.mark.parametrize("padding", [" ", "\t", " \u3000"])
def test_whitespace_inside_a_requirement_costs_no_backtracking(padding: str) -> None:
    assert check_requirement("hxsheet" + padding * 200 + ">=1" + padding * 200)[0] == "hxsheet>=1"
    with pytest.raises(ValueError, match="not a requirement"):
        check_requirement("hxsheet>=1" + padding * 400 + "x")


def test_more_requirements_than_a_skill_may_declare_are_one_problem() -> None:
    lines = "".join(f"hxpkg{i}>=1\n" for i in range(10_000))
    found = read_requirements({"requirements.txt": lines.encode(), "scripts/x.py": PEP723_SHEET})
    assert found.requirements == ()
    assert found.problems == (
        f"declares 10001 requirements, more than the {MAX_REQUIREMENTS} a skill may declare; none is installed",
    )


def test_refused_lines_are_reported_up_to_a_bound() -> None:
    lines = "".join(f"-e ./vendor/pkg{i}\n" for i in range(10_000))
    found = read_requirements({"requirements.txt": lines.encode()})
    assert found.requirements == ()
    assert len(found.problems) == MAX_PROBLEMS + 1
    assert found.problems[-1] == f"and {10_000 - MAX_PROBLEMS} more problems"


def test_many_pep723_headers_are_read_in_one_pass() -> None:
    # The reference expression of PEP 723 backtracks over every later line from each header.
    headers = b"# /// script\n" * ((MAX_PARSED - len(PEP723_SHEET)) // 13)
    assert read_requirements({"x.py": headers}) == read_requirements({})
    closed = PEP723_SHEET + headers
    assert [r.text for r in read_requirements({"x.py": closed}).requirements] == ["hxsheet"]


_LINES = st.sampled_from(
    [
        "# /// script",
        "# /// other",
        "# ///",
        "#",
        "# ",
        '# dependencies = ["a"]',
        "# x",
        "x = 1",
        "",
        "#x",
        "\r",
        "# ///\r",
    ]
)


@given(st.lists(_LINES, max_size=14), st.booleans())
def test_pep723_blocks_are_found_as_the_reference_expression_finds_them(lines: list[str], newline: bool) -> None:
    text = "\n".join(lines) + ("\n" if newline else "")
    reference = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
    assert _metadata_blocks(text) == [(m["type"], m["content"]) for m in reference.finditer(text)]


def test_files_too_large_to_read_are_named_and_left_unread() -> None:
    listing = [
        ("requirements.txt", 50 * 1024 * 1024),
        ("pyproject.toml", 10),
        ("scripts/big.py", MAX_PARSED + 1),
        ("scripts/ok.py", MAX_PARSED),
        ("data/table.csv", 10),
        ("nested/requirements.txt", 10),
    ]
    wanted, unread = files_to_read(listing)
    assert wanted == ["pyproject.toml", "scripts/ok.py"]
    assert unread == [
        f"requirements.txt: 52428800 bytes, over the {MAX_PARSED} bytes read for requirements; not read",
        f"scripts/big.py: {MAX_PARSED + 1} bytes, over the {MAX_PARSED} bytes read for requirements; not read",
    ]


def test_files_to_read_stop_at_a_total() -> None:
    listing = [(f"scripts/s{i:03}.py", MAX_PARSED) for i in range(100)]
    wanted, unread = files_to_read([("requirements.txt", 10), *listing])
    assert wanted[0] == "requirements.txt" and sum(MAX_PARSED for p in wanted[1:]) <= MAX_READ
    assert unread == [f"{100 - len(wanted) + 1} scripts not read: over {MAX_READ} bytes in all"]


def test_a_refused_requirement_is_named_without_its_credentials() -> None:
    with pytest.raises(ValueError) as refused:
        check_requirement("pkg @ https://acme:tok3n@mirror.example/pkg.whl")
    assert "tok3n" not in str(refused.value) and "https://***@mirror.example" in str(refused.value)
