"""open_repository(): URL forms, options, unknown schemes and third-party schemes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repositories import (
    DirectoryRepository,
    EntryPointRepository,
    GitRepository,
    InvalidRepositoryConfig,
    MemoryRepository,
    MySQLRepository,
    PackageRepository,
    RepositoryUnavailable,
    SkillRepository,
    UnknownScheme,
    known_schemes,
    open_repository,
    register_scheme,
)


def test_directory_urls_and_bare_paths(tmp_path: Path) -> None:
    for url in (f"dir:{tmp_path}", str(tmp_path), f"dir://{tmp_path}"):
        repo = open_repository(url)
        assert isinstance(repo, DirectoryRepository) and repo.path == tmp_path
    repo = open_repository(f"dir:{tmp_path}#writable=true&source=mine")
    assert isinstance(repo, DirectoryRepository) and repo.writable and repo.source == "mine"


def test_git_urls_with_fragment_options(tmp_path: Path) -> None:
    repo = open_repository(
        f"git+file://{tmp_path}/team.git#branch=dev&subdir=pack/skills&check_interval=30&background_refresh=1"
    )
    assert isinstance(repo, GitRepository)
    assert (repo.url, repo.branch, repo.subdir) == (f"file://{tmp_path}/team.git", "dev", "pack/skills")
    assert repo.check_interval == 30 and repo.background_refresh
    https = open_repository("git+https://github.com/acme/team-skills.git")
    assert isinstance(https, GitRepository)
    assert https.url == "https://github.com/acme/team-skills.git"
    assert https.source == "git-acme-team-skills"
    ssh = open_repository("git+ssh://git@example.com/acme/ops.git#auto_sync=false")
    assert isinstance(ssh, GitRepository) and not ssh.auto_sync and ssh.source == "git-acme-ops"


def test_mysql_url_with_query_options() -> None:
    repo = open_repository("mysql://user:p%40ss@db.example:3307/harness?table=market&writable=true")
    assert isinstance(repo, MySQLRepository)
    assert (repo.database, repo.table, repo.writable) == ("harness", "market", True)
    assert repo.source == "mysql-harness-market"
    with pytest.raises(InvalidRepositoryConfig):
        open_repository("mysql://u@h/db?table=x;drop")


def test_package_and_entrypoint_urls() -> None:
    pkg = open_repository("pkg:acme_skills/more/skills")
    assert isinstance(pkg, PackageRepository)
    assert (pkg.package, pkg.folder, pkg.source) == ("acme_skills", "more/skills", "pkg-acme_skills")
    default = open_repository("pkg:acme_skills")
    assert isinstance(default, PackageRepository) and default.folder == "skills"
    assert isinstance(open_repository("entrypoints:harness.skills"), EntryPointRepository)


def test_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(UnknownScheme) as caught:
        open_repository("ftp://example.com/skills")
    for scheme in ("dir", "git+https", "git+ssh", "git+file", "mysql", "pkg", "entrypoints"):
        assert scheme in str(caught.value)
        assert scheme in known_schemes()


def test_bad_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRepositoryConfig, match="unknown option"):
        open_repository(f"dir:{tmp_path}#colour=blue")
    with pytest.raises(InvalidRepositoryConfig, match="true or false"):
        open_repository(f"git+file://{tmp_path}/r.git#shallow=maybe")
    with pytest.raises(InvalidRepositoryConfig):
        open_repository("  ")


def test_registered_scheme_builds_the_third_party_repository() -> None:
    def factory(url: str) -> SkillRepository:
        return MemoryRepository(source=url.split(":", 1)[1])

    register_scheme("test-memory", factory, replace=True)
    repo = open_repository("test-memory:fixtures")
    assert isinstance(repo, MemoryRepository) and repo.source == "fixtures"
    assert "test-memory" in known_schemes()
    with pytest.raises(InvalidRepositoryConfig, match="already registered"):
        register_scheme("test-memory", factory)
    with pytest.raises(InvalidRepositoryConfig, match="already registered"):
        register_scheme("git+https", factory)


def test_entry_point_plugin_provides_a_scheme(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / "vault_market-1.0.dist-info").mkdir(parents=True)
    (plugin / "vault_market-1.0.dist-info" / "METADATA").write_text("Name: vault-market\nVersion: 1.0\n")
    (plugin / "vault_market-1.0.dist-info" / "entry_points.txt").write_text(
        "[harness.repositories]\nvault = vault_market:open_vault\n"
    )
    (plugin / "vault_market.py").write_text(
        "from repositories import MemoryRepository\n"
        "def open_vault(url):\n    return MemoryRepository(source='vault-' + url.split(':', 1)[1])\n"
    )
    script = "from repositories import open_repository as o; r = o('vault:team'); print(type(r).__name__, r.source)"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{plugin}:{root}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MemoryRepository", "vault-team"]


def test_a_plugin_whose_dependency_is_missing_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vault_market-1.0.dist-info").mkdir()
    (tmp_path / "vault_market-1.0.dist-info" / "METADATA").write_text("Name: vault-market\nVersion: 1.0\n")
    (tmp_path / "vault_market-1.0.dist-info" / "entry_points.txt").write_text(
        "[harness.repositories]\nvault = vault_market:open_vault [vault]\n"
    )
    (tmp_path / "vault_market.py").write_text("import vault_sdk_not_installed\ndef open_vault(url): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "vault" in known_schemes()
    with pytest.raises(RepositoryUnavailable, match=r"pip install 'vault-market\[vault\]'"):
        open_repository("vault:team")
