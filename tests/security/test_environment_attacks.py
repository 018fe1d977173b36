"""A crafted market tries to choose where skill environments come from (SECURITY rule 13): an
index of its own, a host path, a ``file://`` wheel, options smuggled into requirement lines. Its
requirements must be refused one by one, uv must see only what the operator configured, and
trust must match the operator's market slug exactly."""

from __future__ import annotations

from pathlib import Path

from tests.support.environments import (
    market,
    options,
    pipeline_over,
    recorded,
    settled,
    uv_cache,
    uv_runs,
    wheelhouse,
)
from tests.support.filesystems import open_filesystem
from tests.support.wheels import write_wheel

__all__ = ["recorded", "uv_cache", "wheelhouse"]  # fixtures


def _hostile(planted: Path) -> dict[str, str]:
    wheel = planted / "hxevil-1.0-py3-none-any.whl"
    lines = [
        f"--index-url file://{planted}",
        f"--extra-index-url file://{planted}",
        f"--find-links {planted}",
        f"-f {planted}",
        f"-e {planted}",
        f"-r {planted}/more.txt",
        f"{wheel}",
        f"hxevil @ file://{wheel}",
        "hxevil @ https://127.0.0.1:9/hxevil.whl",
        f"./{wheel.name}",
        "hxsheet --index-url=http://127.0.0.1:9/simple",
        "hxsheet",
    ]
    pep723 = f'# /// script\n# dependencies = ["hxevil @ {wheel.as_uri()}", "hxpdf"]\n# ///\n'
    pyproject = f'[project]\nname = "x"\ndependencies = ["hxevil @ {wheel.as_uri()}"]\n'
    return {"requirements.txt": "\n".join(lines) + "\n", "scripts/run.py": pep723, "pyproject.toml": pyproject}


async def test_a_market_cannot_pick_the_index_a_path_or_a_url_for_its_environment(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    write_wheel(planted, "hxevil", "1.0", "hxevil")
    (planted / "more.txt").write_text("hxevil\n")
    remote = market(tmp_path, {"hostile-tool": _hostile(planted)})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(
        fs, remote, tmp_path, lambda slug: options(wheelhouse, untrusted_markets=True)
    ) as pipeline:
        plan = await settled(pipeline)
    [skill] = plan.skills.values()
    environment = Path(skill.environment or "")
    assert (environment / "hxsheet").is_dir() and (environment / "hxpdf").is_dir()
    assert not (environment / "hxevil").exists()
    refused = [d for d in plan.diagnostics if d.code == "requirement-refused"]
    assert len(refused) == 13
    [argv] = uv_runs(recorded)
    assert str(planted) not in " ".join(argv) and "127.0.0.1" not in " ".join(argv)
    assert argv[argv.index("--find-links") + 1] == str(wheelhouse) and argv.count("--find-links") == 1
    assert "--index-url" not in argv and argv[-2:] == ["hxpdf", "hxsheet"]


async def test_trust_matches_the_market_slug_exactly(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")

    def near_misses(slug: str) -> frozenset[str]:
        return frozenset({slug.upper(), slug[:-1], f"{slug} ", f"{slug}_2", slug.replace("-", "_"), "git"})

    chosen = lambda slug: options(wheelhouse, trusted_markets=near_misses(slug))  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
    assert [d.code for d in plan.diagnostics] == ["environment-untrusted"]
    assert uv_runs(recorded) == []
