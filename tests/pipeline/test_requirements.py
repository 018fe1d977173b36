"""Reading what a skill's files say it needs, and inferring it from imports, without running them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.requirements import (
    check_requirement,
    infer_imports,
    read_requirements,
)


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
