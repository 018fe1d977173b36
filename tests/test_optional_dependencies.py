"""The optional integrations stay optional: importing the harness loads none of them (nor pytest,
which only the conformance suites import), and a run works (untraced) when OpenTelemetry is not
installed at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("opentelemetry", "ag_ui", "openai", "anthropic", "uv")


def _python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_the_harness_and_building_an_agent_imports_no_optional_package(tmp_path: Path) -> None:
    loaded = _python(
        f"""
        import sys
        import harness, harness.tracing, harness.agent.agui
        harness.Harness(workspace={str(tmp_path)!r}, model="demo")
        print(sorted({{m.split(".")[0] for m in sys.modules}} & {set(OPTIONAL)!r}))
        """
    )
    assert loaded == "[]"


def test_only_the_conformance_suites_import_pytest() -> None:
    loaded = _python(
        """
        import sys
        import filesystems, repositories, harness, harness.cli
        before = "pytest" in sys.modules
        import filesystems.testing, repositories.testing
        print(before, "pytest" in sys.modules)
        """
    )
    assert loaded == "False True"


def test_without_opentelemetry_a_run_is_untraced_and_works(tmp_path: Path) -> None:
    out = _python(
        f"""
        import asyncio, sys
        sys.modules["opentelemetry"] = None  # as if it were not installed: importing it fails
        from harness import Harness, RuntimeContext

        async def main():
            async with Harness(workspace={str(tmp_path)!r}, model="demo") as agent:
                events = [e async for e in agent.stream("hello", context=RuntimeContext(user_id="alice"))]
            print(type(events[-1]).__name__, "opentelemetry.trace" in sys.modules)

        asyncio.run(main())
        """
    )
    assert out == "RunFinished False"


def test_without_ag_ui_the_encoder_says_which_extra_to_install() -> None:
    out = _python(
        """
        import asyncio, sys
        sys.modules["ag_ui"] = None
        from harness.agent.agui import agui_sse

        async def main():
            async def nothing():
                return
                yield

            try:
                [line async for line in agui_sse(nothing())]
            except ImportError as exc:
                print(exc)

        asyncio.run(main())
        """
    )
    assert "pip install 'agent-skill-harness[agui]'" in out


def test_without_uv_building_an_environment_says_which_extra_to_install() -> None:
    out = _python(
        """
        import os, sys
        sys.modules["uv"] = None  # as if the [envs] extra were not installed
        os.environ["PATH"] = "/nonexistent"
        from harness.pipeline.uv import EnvironmentBuildError, find_uv

        try:
            find_uv()
        except EnvironmentBuildError as exc:
            print(exc)
        """
    )
    assert "pip install 'agent-skill-harness[envs]'" in out
