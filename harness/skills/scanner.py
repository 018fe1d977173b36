"""A rule-based scanner for dangerous content in skill files.

Rules are data — a regular expression, a category, a severity and a message — so extending the
scanner means adding a :class:`ScanRule` (or a dict through :func:`rules_from_data`), not code.
Agent-written content is scanned *before* it is written; a verdict is dangerous when a finding
reaches the scanner's blocking severity. The same scanner runs over market skills on ingest,
where each source gets a :class:`TrustLevel` (report-only by default).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import dataclasses
import enum
import functools
import hashlib
import importlib
import itertools
import json
import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from harness.skills._rule_starts import Probe, Starts

__all__ = [
    "BINARY_SUFFIXES",
    "DEFAULT_RULES",
    "DEFAULT_SCAN_LIMIT",
    "Finding",
    "IngestVerdict",
    "MarketScanPolicy",
    "ScanRule",
    "ScanVerdict",
    "Scanner",
    "Severity",
    "TrustLevel",
    "decoded_blobs",
    "despace",
    "is_binary",
    "needles",
    "normalise",
    "rules_from_data",
    "scan",
]

Severity = Literal["low", "medium", "high", "critical"]
# The standard library's own regular-expression parser (no typed public name): rules' literal
# prefilters are read off the parsed pattern.
_sre_parser: Any = importlib.import_module("re._parser")
_SEVERITY_RANK: dict[str, int] = {"low": 0, "medium": 1, "high": 2, "critical": 3}
_EXCERPT = 160


@dataclass(frozen=True, kw_only=True)
class ScanRule:
    """One pattern to look for.

    ``pattern`` is a Python regular expression searched line by line (case-insensitive unless
    ``case_sensitive``); ``category`` groups rules (``exfiltration``, ``destructive``,
    ``reverse-shell``, ``pipe-to-shell``, ``prompt-injection`` or your own); ``message`` tells
    the author what was found and why it is refused.
    """

    id: str
    category: str
    severity: Severity
    pattern: str
    message: str
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if not self.id or not self.category:
            raise ValueError("a scan rule needs an id and a category")
        if self.severity not in _SEVERITY_RANK:
            raise ValueError(f"rule {self.id}: severity must be one of {sorted(_SEVERITY_RANK)}")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"rule {self.id}: invalid pattern: {exc}") from exc


@dataclass(frozen=True, kw_only=True)
class Finding:
    """A rule that matched: where (file path, 1-based line) and the matching line, shortened."""

    rule: str
    category: str
    severity: Severity
    message: str
    path: str
    line: int
    excerpt: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape used in audit records and tool replies."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """A finding back from :meth:`as_dict`'s shape (``KeyError``/``ValueError`` when it is not)."""
        severity = str(data["severity"])
        if severity not in _SEVERITY_RANK:
            raise ValueError(f"unknown severity {severity!r}")
        return cls(
            rule=str(data["rule"]),
            category=str(data["category"]),
            severity=severity,  # type: ignore[arg-type]  # checked above
            message=str(data["message"]),
            path=str(data["path"]),
            line=int(data["line"]),
            excerpt=str(data["excerpt"]),
        )


@dataclass(frozen=True, kw_only=True)
class ScanVerdict:
    """The outcome of a scan: ``dangerous`` when a finding reached the blocking severity."""

    dangerous: bool
    findings: tuple[Finding, ...] = ()

    def summary(self) -> str:
        """One line per finding, for refusal messages."""
        return "; ".join(f"{f.path}:{f.line}: {f.category} ({f.severity}): {f.message}" for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape used in audit records and tool replies."""
        return {"dangerous": self.dangerous, "findings": [f.as_dict() for f in self.findings]}

    @classmethod
    def combined(cls, verdicts: Iterable[ScanVerdict]) -> ScanVerdict:
        """One verdict for files scanned apart (each by the same scanner): dangerous when any
        is, findings sorted by path and line."""
        verdicts = list(verdicts)
        findings = sorted((f for v in verdicts for f in v.findings), key=lambda f: (f.path, f.line, f.rule))
        return cls(dangerous=any(v.dangerous for v in verdicts), findings=tuple(findings))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScanVerdict:
        """A verdict back from :meth:`as_dict`'s shape (``KeyError``/``ValueError``/``TypeError``
        when it is not)."""
        dangerous = data["dangerous"]
        if not isinstance(dangerous, bool):
            raise ValueError("dangerous must be true or false")
        return cls(dangerous=dangerous, findings=tuple(Finding.from_dict(f) for f in data["findings"]))


# A built-in rule's fields; the rules themselves are built on first use (see ``_default_rules``).
_RuleFields = tuple[str, str, Severity, str, str]


def _rule(id: str, category: str, severity: Severity, pattern: str, message: str) -> _RuleFields:
    return id, category, severity, pattern, message


_SECRET_VARS = r"\$\{?[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)"
# A shell as a command: ``sh``, ``/bin/bash``, ``sudo -E zsh``, ``env sh``.
_SHELLS = r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:/(?:usr/)?(?:local/)?bin/)?(?:ba|z|da|k|fi|tc|c)?sh\b"
# A pipe (never the ``||`` of "or else").
_PIPE = r"(?<!\|)\|(?!\|)\s*"
# What runs a file: a shell or an interpreter named before it (``bash x``, ``python3 -u x``).
_RUNS = rf"(?<![\w.-])(?:{_SHELLS}|source|python[\d.]*|perl|ruby|node|php)\s+(?:-\S+\s+)*['\"]?"
_NET_TOOLS = r"(?:curl|wget|nc|ncat|netcat|socat|telnet)"
_DNS_TOOLS = r"(?:dig|nslookup|drill|ping)"
_VAR = r"\$\{?[A-Za-z_]\w*+\}?"
# A host with a variable in it that is more than one bare variable: ``$A.$B``, ``evil.$D``.
# Possessive quantifiers keep the match linear on long hostile lines.
_ASSEMBLED = rf"(?=[^\s/'\"]*\$)[\w-]*+(?:(?:{_VAR}|\.)[\w-]*+){{2,}}"
# Where command-line tools keep credentials, relative to the home folder; ``['"]?`` lets a
# shell's quotes split a path (``~/".aws"/credentials``). The first group is never a project's own
# file, so it counts wherever it appears as a path; the second (``.npmrc``, ``.ssh/``) is also kept
# in projects, so it counts only under a home folder.
_Q = r"['\"]?"
_OWN_STORES = (
    rf"\.aws{_Q}/{_Q}credentials|\.config{_Q}/{_Q}(?:gh|hub|gcloud|rclone|op|git{_Q}/{_Q}credentials)\b"
    rf"|\.(?:azure|gnupg|password-store){_Q}/|\.(?:docker{_Q}/{_Q}config\.json|dockercfg|kube{_Q}/{_Q}config)\b"
    rf"|\.(?:cargo|gem){_Q}/{_Q}credentials|\.terraform\.d{_Q}/{_Q}credentials|\.composer{_Q}/{_Q}auth\.json"
    r"|\.(?:git-credentials|pypirc|netrc|pgpass|vault-token|s3cfg|boto|my\.cnf)\b"
)
_HOME_ONLY_STORES = rf"\.(?:ssh|aws){_Q}/|\.(?:npmrc|yarnrc)\b"
_HOME_STORES = rf"(?:{_OWN_STORES}|{_HOME_ONLY_STORES})"
# The same stores under ``$XDG_CONFIG_HOME`` (no leading dot).
_XDG_STORES = rf"\$\{{?XDG_CONFIG_HOME\}}?{_Q}/{_Q}(?:gh|hub|gcloud|rclone|git{_Q}/{_Q}credentials)\b"
# Any home folder: ``~``, ``~user``, ``$HOME``, ``/root``, ``/home/<user>``, ``%USERPROFILE%``.
_ANY_HOME = r"(?:~[\w.-]*|\$\{?HOME\}?|/root|/home/[^/\s'\"]+|%USERPROFILE%)"
# A store named as one component of a path built in code (``Path.home() / ".aws"``).
_STORE_PARTS = (
    r"['\"]\.(?:ssh|aws|gnupg|azure|kube|docker|netrc|npmrc|pypirc|git-credentials|pgpass|vault-token"
    r"|password-store)['\"/]|['\"]\.config['\"]?\s*[,/]\s*['\"](?:gh|hub|gcloud|rclone|git)['\"/]"
)
# Commands whose output says who and where we are, or what secrets we hold.
_DUMP = (
    r"(?:(?:env|printenv|set|whoami|id|hostname|uname)\b|export\s+-p|declare\s+-x"
    r"|(?:(?:cat|head|tail|base64|xxd|od|strings|gzip|bzip2|xz|zip|tar)\s|<)\s*[^)`\n]*"
    rf"(?:/etc/|/proc/|\.env\b|_history|{_HOME_STORES}|{_XDG_STORES}))"
)
_DUMPED = rf"(?:\$\(\s*{_DUMP}|`\s*{_DUMP})"
_PROC_ENVIRON = r"/proc/(?:self|\d+|\$\$|\$\{?\w+\}?)/environ"
# The whole environment of a process (not one variable read from it).
_WHOLE_ENV = (
    r"(?:os\.environ\b(?!\s*(?:\[|\.(?:get|setdefault|pop)\b))|process\.env\b(?!\s*[.\[])|" + _PROC_ENVIRON + ")"
)
_HOME = r"(?:~|\$\{?HOME\}?)"
# Every top-level folder of a Linux or macOS system (``/tmp`` aside: cleaning it is ordinary).
_SYSTEM_DIRS = (
    r"/(?:bin|boot|dev|etc|home|lib\w*|media|mnt|nix|opt|proc|root|run|sbin|snap|srv|sys|usr|var"
    r"|Applications|Library|System|Users|Volumes|private)"
)
_HOME_IN_CODE = (
    r"(?:os\.path\.expanduser\(\s*['\"]~/?['\"]\s*\)|(?:pathlib\.)?Path\.home\(\)"
    r"|Path\(\s*['\"](?:/|~/?)['\"]\s*\)(?:\.expanduser\(\))?|os\.environ\[\s*['\"]HOME['\"]\s*\]"
    r"|os\.(?:environ\.get|getenv)\(\s*['\"]HOME['\"][^)\n]*\)|os\.homedir\(\)|Dir\.home\b|ENV\[\s*['\"]HOME['\"]\s*\])"
)
# The root, the home or a system folder as a string in code (a glob of everything in it too).
_ROOT_STRING = rf"['\"](?:/|~/?|{_SYSTEM_DIRS}/?)(?:\*\*?/?)*['\"]"
_ROOT_IN_CODE = rf"(?:{_ROOT_STRING}|{_HOME_IN_CODE})"
# Library calls that delete a folder and everything in it.
_DELETE_TREE = (
    r"(?:rmtree|rm_rf|rm_r|remove_entry_secure|remove_dir|remove_tree|removedirs|RemoveAll|remove_dir_all"
    r"|rimraf(?:\.sync)?)"
)
# The rest of one rm command: up to a separator or the next rm, so each rm reads only its own
# arguments (linear on a hostile line of repeated rm).
_RM_ARGS = r"(?:(?!\brm\b)[^\n;&|])*?"
# What ends an argument: a blank, a separator, the end of a quoted call (``os.system("rm -rf /")``).
_ARG_END = r"(?=[\s;&|),\]`]|$)"
# Walking a folder from code, and deleting what the walk yields.
_WALKS = (
    rf"(?:\b(?:os\.walk|os\.scandir|os\.listdir|glob\.i?glob|readdirSync|Dir\.glob)\s*\(\s*{_ROOT_IN_CODE}"
    rf"|\bPath\(\s*{_ROOT_STRING}\s*\)(?:\.expanduser\(\))?\.(?:r?glob|walk|iterdir)\s*\("
    r"|\bPath\.home\(\)\.(?:r?glob|walk|iterdir)\s*\()"
)
_UNLINKS = r"(?:\.unlink\s*\(|\.rmdir\s*\(|\bos\.(?:remove|unlink|rmdir)\s*\(|\bunlinkSync\s*\(|\bFile\.delete\s*\()"
# A network connection opened from code, and a shell handed to something (a socket, a pipe).
_CONNECTS = (
    r"(?:\b(?:socket|create_connection|fsockopen|pfsockopen|stream_socket_client)\s*\(|IO::Socket"
    r"|\bTCPSocket\b|\bnet\.(?:connect|createConnection|Socket)\b|\brequire\(\s*['\"](?:node:)?(?:net|tls)['\"]\s*\))"
)
_SHELL_HANDED = (
    r"(?:(?<!#!)(?<!#! )/bin/(?:ba|da|z|k|tc|c)?sh\b|\b(?:ba|z|da)?sh\s+-i\b|cmd\.exe\b|\bpty\.spawn\b"
    r"|\bdup2\s*\(|\.fileno\(\)|\.pipe\(\s*\w+\.stdin\b|\bspawn\(\s*['\"](?:ba|z|da)?sh['\"])"
)
# Up to eight more lines between two parts of one construct (a script, not one command line).
_NEARBY = r"(?:[^\n]*+\n){0,8}?[^\n]*?"


def _first(marker: str) -> str:
    """``marker``'s first match on its line, never retried from a later one: a rule ``A…B``
    written ``_first(A)[^\\n]*B`` matches the same lines, but tries each line once instead of
    once per ``A`` in it (a long hostile line of ``A A A …`` would cost quadratic time)."""
    return rf"(?<![^\n])(?>[^\n]*?{marker})"


def _with(rare: str) -> str:
    """A line start whose line holds ``rare``: put before a rule's common first part, it lets
    the many lines without the rare part fail at one cheap scan."""
    return rf"(?<![^\n])(?=[^\n]*?(?:{rare}))"


# The rest of one curl or wget command: up to a separator or the next download, so each
# download reads only its own arguments (linear on a hostile line of repeated downloads).
_OWN_ARGS = r"(?:(?!\b(?:curl|wget)\b)[^\n;&|])*?"
# Where a download lands: ``curl -o F``, ``wget -O F``, ``--output F``, the URL's own name
# (``curl -O``, ``wget``), ``urlretrieve(url, F)``; then what runs it, within the next
# ``_RUN_WITHIN`` characters.
_DOWNLOADED = (
    rf"(?:(?>\b(?:curl|wget)\b{_OWN_ARGS}\s(?:-[a-z]*o|--output(?:-document)?)(?:\s+|=)?['\"]?([^\s'\";&|<>()]+))"
    rf"|(?>\b(?:curl|wget)\b{_OWN_ARGS}://[^\s'\"]*/([\w.-]+)(?![^\s'\";&|)]))"
    r"|(?>\burlretrieve\(\s*[^,\n]+,\s*['\"]([^'\"\n]+)['\"]))"
)
_RUN_WITHIN = 600
_RUNS_FILE = rf"(?:{_RUNS}|(?:(?<![^\n])|[;&|(]|\b(?:then|do|exec))\s*(?:sudo\s+)?(?:\.\s+)?['\"]?)(?:\./)?"
_MEDIA = r"(?:png|jpe?g|gif|webp|ico|bmp|pdf|zip|gz|tgz|woff2?|ttf|otf|mp[34]|wav|db|sqlite3?)"
# Prompt injection: a verb that drops orders, something that marks them as the earlier ones, and
# the orders themselves; synonyms of each, so rewording does not slip past.
_DROP = (
    "ignore", "disregard", "forget", "override", "bypass", "discard", "dismiss", "abandon", "neglect",
    "set aside", "pay no attention to", "stop following", "do not follow", "don't follow",
)  # fmt: skip
_EARLIER = (
    "previous", "prior", "above", "earlier", "preceding", "foregoing", "former", "original", "initial",
    "all", "system", "your", "developer", "safety",
)  # fmt: skip
_ORDERS = (
    "instructions", "instruction", "prompts", "prompt", "rules", "guidelines", "guidance", "directives",
    "directive", "directions", "orders", "constraints", "policies", "guardrails", "programming",
)  # fmt: skip


def _words(words: Iterable[str], gap: str) -> str:
    """An alternation of ``words``, longest first, with ``gap`` between the parts of a phrase."""
    return "(?:" + "|".join(re.escape(w).replace(r"\ ", gap) for w in sorted(words, key=len, reverse=True)) + ")"


_SPACE = r"\s+"


_BUILTIN_RULES: tuple[_RuleFields, ...] = (
    _rule(
        "exfil-secret-upload",
        "exfiltration",
        "critical",
        _first(r"\b(?:curl|wget|nc|ncat|http)\b") + rf"[^\n]*{_SECRET_VARS}",
        "sends a secret-looking environment variable over the network",
    ),
    _rule(
        "exfil-env-dump",
        "exfiltration",
        "critical",
        _first(rf"(?:\b(?:env|printenv|set)\b|\bcat\s+{_PROC_ENVIRON})\s*(?=\|)")
        + rf"[^\n]*{_PIPE}{_NET_TOOLS}\b|"
        + _first(rf"\b{_NET_TOOLS}\b")
        + rf"[^\n]*<\s*['\"]?(?:{_PROC_ENVIRON}|/etc/(?:passwd|shadow)\b|{_HOME}/\.)",
        "sends the whole environment or a system file to a network tool",
    ),
    _rule(
        "exfil-command-output",
        "exfiltration",
        "critical",
        _with(r"\$\(|`|/environ")
        + _first(rf"\b(?:{_NET_TOOLS}|{_DNS_TOOLS}|http)\b")
        + rf"[^\n]*(?:{_DUMPED}|{_PROC_ENVIRON})",
        "sends the environment, the user's identity or a secret file's content over the network",
    ),
    _rule(
        "exfil-credential-files",
        "exfiltration",
        "high",
        rf"{_ANY_HOME}{_Q}[/\\]{_Q}(?:{_HOME_ONLY_STORES})|(?<![\w.-]){_OWN_STORES}|{_XDG_STORES}"
        rf"|{_first(_HOME_IN_CODE)}[^\n]*?{_STORE_PARTS}|/etc/shadow|\bid_(?:rsa|ed25519|ecdsa|dsa)\b",
        "reads a credential store (SSH keys, cloud and registry tokens of command-line tools, /etc/shadow)",
    ),
    _rule(
        "exfil-upload-file",
        "exfiltration",
        "high",
        _first(r"\bcurl\b") + r"[^\n]*(?:--upload-file|-T\s|(?:-F|--form)\s*['\"]?\w+=['\"]?[@<]"
        r"|(?:-d|--data(?:-binary|-raw|-ascii|-urlencode)?)(?:\s*|=)['\"]?(?:\w+=)?@)"
        r"|" + _first(r"\bwget\b") + r"[^\n]*--(?:post|body)-file",
        "uploads a local file to a remote server",
    ),
    _rule(
        "exfil-variable-host",
        "exfiltration",
        "high",
        _first(r"\b(?:curl|wget)\b") + rf"[^\n]*://(?:{_ASSEMBLED}|[^\s/'\"]*(?:\$\(|`))"
        rf"|\b(?:{_NET_TOOLS}|{_DNS_TOOLS})\b(?:\s+[-+]\S+)*\s+['\"]?{_ASSEMBLED}"
        rf"|\b([A-Za-z_]\w*+)=['\"]?(?:{_ASSEMBLED}['\"]?(?=[\s;&|]|$)|(?:\$\(|`)\s*(?:echo|printf|base64|rev|xxd|tr)\b)"
        rf"(?:[^\n]*\n){{0,20}}?[^\n]*\b(?:{_NET_TOOLS}|{_DNS_TOOLS})\b[^\n]*\$\{{?\1\b",
        "talks to a host assembled or decoded at run time, hiding where data goes",
    ),
    _rule(
        "exfil-environ-post",
        "exfiltration",
        "critical",
        _first(r"\b(?:post|put|patch|request|urlopen|fetch|send|sendall|sendto)\s*\(") + rf"[^\n]*{_WHOLE_ENV}",
        "sends the whole process environment to a remote server",
    ),
    _rule(
        "destructive-rm-root",
        "destructive",
        "critical",
        rf"\brm\s(?={_RM_ARGS}(?<!\S)-(?:[a-z]*[rf][a-z]*|-recursive|-force)\b){_RM_ARGS}(?<=\s)"
        rf"['\"]?(?:/|/\*|{_HOME}/?\*?|\*|\.\*?|{_SYSTEM_DIRS}/?\*?)(?:['\"]/?\*?)?{_ARG_END}"
        rf"|['\"]rm['\"]\s*,\s*(?=[^\]\n]*['\"]-(?:[a-z]*r[a-z]*|-recursive)['\"])(?:['\"][^'\"\n]*['\"]\s*,\s*)*?"
        rf"{_ROOT_STRING}",
        "recursively deletes the root, home, a system or the current folder",
    ),
    _rule(
        "destructive-find-delete",
        "destructive",
        "critical",
        _first(rf"\bfind\s+(?:-[HLP]\s+)*['\"]?(?:/|{_HOME}/?|{_SYSTEM_DIRS}/?)['\"]?\s") + r"[^\n]*?"
        r"(?:-delete\b|-exec(?:dir)?\s+(?:sudo\s+)?(?:rm|shred)\b|\|\s*xargs\s+(?:-\S+\s+)*rm\b)",
        "deletes everything `find` walks under the root, home or a system folder",
    ),
    _rule("destructive-mkfs", "destructive", "critical", r"\bmkfs(?:\.\w+)?\s+/dev/", "formats a block device"),
    _rule(
        "destructive-dd-device",
        "destructive",
        "critical",
        r"(?:\bdd\b[^\n]*\bof=|\b(?:shred|wipefs)\b[^\n]*\s|(?<![<>&\d])>\s*)/dev/(?:sd|nvme|hd|vd|xvd|mmcblk)",
        "overwrites a block device",
    ),
    _rule(
        "destructive-fork-bomb",
        "destructive",
        "critical",
        r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
        "is a fork bomb",
    ),
    _rule(
        "destructive-chmod-root",
        "destructive",
        "high",
        r"\bchmod\s+(?:-[a-z]*R[a-z]*\s+)\S+\s+/(?:\s|$)",
        "recursively changes permissions of the whole filesystem",
    ),
    _rule(
        "destructive-rmtree-root",
        "destructive",
        "critical",
        rf"\b{_DELETE_TREE}\s*\(?\s*(?:path\s*=\s*)?{_ROOT_IN_CODE}"
        r"|" + _first(rf"\b(?:rm|rmSync|rmdir|rmdirSync)\s*\(\s*{_ROOT_IN_CODE}\s*,") + r"[^\n]*\brecursive\b",
        "recursively deletes the root, home or a system folder from code",
    ),
    _rule(
        "destructive-walk-delete",
        "destructive",
        "critical",
        f"{_first(_WALKS)}{_NEARBY}{_UNLINKS}",
        "walks the root, home or a system folder and deletes what it finds",
    ),
    _rule(
        "destructive-variable-target",
        "destructive",
        "critical",
        _with(r"=[ \t]*['\"]?(?:/|~|\$\{?HOME)")
        + rf"[^\n]*?\b([A-Za-z_]\w*+)[ \t]*=[ \t]*['\"]?(?:/|~/?|{_HOME}/?|{_SYSTEM_DIRS}/?)['\"]?{_ARG_END}"
        rf"(?:[^\n]*\n){{0,20}}?[^\n]*?"
        rf"(?:\brm\s{_RM_ARGS}(?<=\s)['\"]?\$\{{?\1\b\}}?['\"]?/?\*?['\"]?{_ARG_END}"
        rf"|\bfind\s+(?:-[HLP]\s+)*['\"]?\$\{{?\1\b\}}?['\"]?\s[^\n]*?"
        r"(?:-delete\b|-exec(?:dir)?\s+(?:sudo\s+)?(?:rm|shred)\b|\|\s*xargs\s+(?:-\S+\s+)*rm\b)"
        rf"|\b{_DELETE_TREE}\s*\(\s*(?:path\s*=\s*)?\1\s*[,)])",
        "puts the root, home or a system folder in a variable, then deletes it recursively",
    ),
    _rule(
        "destructive-drop-database", "destructive", "high", r"\bdrop\s+(?:database|schema)\b", "drops a whole database"
    ),
    _rule(
        "reverse-shell-dev-tcp",
        "reverse-shell",
        "critical",
        r"/dev/(?:tcp|udp)/[^\s/]+/[^\s/'\"]",
        "opens a shell connection through /dev/tcp",
    ),
    _rule(
        "reverse-shell-netcat-exec",
        "reverse-shell",
        "critical",
        _first(r"\b(?:nc|ncat|netcat)\b") + r"[^\n]*\s-(?:e|c)\s*\S*(?:sh|bash|cmd)\b",
        "hands a shell to a network connection (netcat -e)",
    ),
    _rule(
        "reverse-shell-socat",
        "reverse-shell",
        "critical",
        _first(r"\bsocat\b") + r"[^\n]*exec:[^\n]*(?:sh|bash)",
        "hands a shell to a network connection (socat exec)",
    ),
    _rule(
        "reverse-shell-pipe",
        "reverse-shell",
        "critical",
        _first(r"\bmkfifo\b")
        + rf"[^\n]*{_PIPE}(?:{_NET_TOOLS}|openssl)\b|"
        + _first(r"\b(?:nc|ncat|netcat|telnet|s_client)\b")
        + rf"[^\n]*{_PIPE}{_SHELLS}|"
        + _first(r"\b(?:ba|z|da)?sh\s+-i\b")
        + rf"[^\n]*{_PIPE}(?:{_NET_TOOLS}|openssl)\b",
        "wires a shell to a network connection through pipes",
    ),
    _rule(
        "reverse-shell-socket",
        "reverse-shell",
        "critical",
        f"{_first(_CONNECTS)}{_NEARBY}{_SHELL_HANDED}|{_first(_SHELL_HANDED)}{_NEARBY}{_CONNECTS}",
        "connects a socket to an interactive shell",
    ),
    _rule(
        "pipe-to-shell",
        "pipe-to-shell",
        "critical",
        _first(r"\b(?:curl|wget|fetch)\b") + rf"[^\n]*{_PIPE}{_SHELLS}",
        "pipes downloaded code straight into a shell",
    ),
    _rule(
        "pipe-to-interpreter",
        "pipe-to-shell",
        "high",
        _first(r"\b(?:curl|wget)\b") + rf"[^\n]*{_PIPE}(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node|php)\b",
        "pipes downloaded code straight into an interpreter",
    ),
    _rule(
        "download-then-run",
        "pipe-to-shell",
        "critical",
        rf"{_DOWNLOADED}(?s:.){{0,{_RUN_WITHIN}}}?{_RUNS_FILE}(?:\1|\2|\3)(?![\w.-])",
        "downloads a file and then runs it",
    ),
    _rule(
        "eval-download-code",
        "pipe-to-shell",
        "critical",
        _first(r"\b(?:exec|eval)\s*\(") + r"[^\n]*\b(?:urlopen|requests\.get|httpx\.get|fetch)\s*\(",
        "runs code downloaded at run time (exec/eval of a fetched body)",
    ),
    _rule(
        "run-disguised-file",
        "pipe-to-shell",
        "high",
        _with(rf"\.{_MEDIA}(?![\w.-])") + rf"[^\n]*?{_RUNS}[^\s'\"]+\.{_MEDIA}(?![\w.-])",
        "runs an image, archive or document as a script",
    ),
    _rule(
        "decode-to-shell",
        "pipe-to-shell",
        "critical",
        rf"\b(?:base64|base32|openssl\s+(?:base64|enc)|xxd|uudecode)\b[^\n|]*\|\s*{_SHELLS}"
        rf"|\b(?:eval|{_SHELLS}\s+-c)\s*['\"]?\$\([^\n]*\b(?:base64|base32|xxd|openssl)\b[^\n]*"
        r"(?:-d\b|--decode|-D\b|-r\b)",
        "decodes hidden code and runs it in a shell",
    ),
    _rule(
        "eval-download",
        "pipe-to-shell",
        "critical",
        rf"\b(?:eval|{_SHELLS}\s+-c)\s*['\"]?\$\(\s*(?:curl|wget|fetch)\b",
        "runs downloaded code through eval or sh -c",
    ),
    _rule(
        "process-substitution-download",
        "pipe-to-shell",
        "critical",
        r"\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\bsource\s+<\(\s*(?:curl|wget)\b",
        "runs downloaded code through process substitution",
    ),
    _rule(
        "powershell-download-exec",
        "pipe-to-shell",
        "critical",
        _first(r"\b(?:iex|invoke-expression)\b") + r"[^\n]*(?:iwr|invoke-webrequest|downloadstring|net\.webclient)",
        "runs downloaded PowerShell code",
    ),
    _rule(
        "injection-ignore-instructions",
        "prompt-injection",
        "high",
        rf"\b{_words(_DROP, _SPACE)}\b[^\n.]{{0,40}}\b{_words(_EARLIER, _SPACE)}\b"
        rf"[^\n.]{{0,20}}\b{_words(_ORDERS, _SPACE)}\b",
        "tries to override the agent's instructions",
    ),
    _rule(
        "injection-ignore-instructions-squashed",
        "prompt-injection",
        "high",
        rf"{_words(_DROP, '')}(?:all|the|any|every|your|of)*{_words(_EARLIER, '')}(?:the|your|of)*{_words(_ORDERS, '')}",
        "tries to override the agent's instructions (letters spaced out)",
    ),
    _rule(
        "injection-reveal-prompt",
        "prompt-injection",
        "high",
        r"\b(?:reveal|print|show|output|repeat|leak)\b[^\n.]{0,30}\b(?:system prompt|hidden instructions|developer message)\b",
        "tries to extract the system prompt",
    ),
    _rule(
        "injection-hide-from-user",
        "prompt-injection",
        "high",
        r"\b(?:do not|don't|never)\s+(?:tell|inform|mention|reveal)\b[^\n.]{0,30}\b(?:the user|anyone)\b",
        "tells the agent to hide its actions from the user",
    ),
    _rule(
        "injection-role-hijack",
        "prompt-injection",
        "high",
        r"\byou are now\b[^\n.]{0,40}\b(?:unrestricted|jailbroken|dan|developer mode|no longer bound)\b",
        "tries to switch the agent into an unrestricted role",
    ),
    _rule(
        "injection-fake-system-tag",
        "prompt-injection",
        "medium",
        r"<\s*/?\s*(?:system|system-prompt|im_start|\|im_start\|)\s*>",
        "imitates a system or chat-template tag",
    ),
)

if TYPE_CHECKING:
    DEFAULT_RULES: tuple[ScanRule, ...]
    """The built-in rules; pass your own tuple (e.g. ``(*DEFAULT_RULES, my_rule)``) to extend them."""
else:

    def __getattr__(name: str) -> tuple[ScanRule, ...]:
        if name == "DEFAULT_RULES":  # built on first use: checking the patterns costs import time
            return _default_rules()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _default_rules() -> tuple[ScanRule, ...]:
    """``DEFAULT_RULES``: the built-in rules, each checked like any other rule."""
    return tuple(
        ScanRule(id=id, category=category, severity=severity, pattern=pattern, message=message)
        for id, category, severity, pattern, message in _BUILTIN_RULES
    )


def rules_from_data(items: Iterable[Mapping[str, Any]]) -> tuple[ScanRule, ...]:
    """Build rules from plain data (a YAML or JSON list of objects with the rule's fields)."""
    rules = []
    for item in items:
        unknown = set(item) - {f for f in ScanRule.__dataclass_fields__}
        if unknown:
            raise ValueError(f"scan rule {item.get('id')!r}: unknown fields {sorted(unknown)}")
        rules.append(ScanRule(**item))
    return tuple(rules)


@dataclass(frozen=True)
class _Compiled:
    """A rule ready to run: its pattern compiled, and where and for what to look first."""

    rule: ScanRule
    regex: re.Pattern[str]
    # Lower-case strings one of which every match contains (``None``: no such set is known, the
    # rule always runs). Derived from the pattern itself, never written by hand.
    needles: tuple[str, ...] | None
    # Where matches can start (``None``: anywhere, the rule runs over the whole text).
    starts: Starts | None


class Scanner:
    """Scans skill files with a fixed set of rules.

    ``block_at`` is the lowest severity that makes a verdict dangerous (default ``"high"``):
    lower findings are still reported. Binary files (a known binary format under its own name,
    see :func:`is_binary`) are skipped; NUL bytes in any other file are dropped before matching.
    """

    def __init__(self, rules: Iterable[ScanRule] | None = None, *, block_at: Severity = "high") -> None:
        if block_at not in _SEVERITY_RANK:
            raise ValueError(f"block_at must be one of {sorted(_SEVERITY_RANK)}")
        self._given = None if rules is None else tuple(rules)
        ids = [rule.id for rule in self._given or ()]
        if len(ids) != len(set(ids)):
            raise ValueError("scan rule ids must be unique")
        self.block_at: Severity = block_at

    @functools.cached_property
    def rules(self) -> tuple[ScanRule, ...]:
        """The rules given, else ``DEFAULT_RULES`` (built when first asked for: a pipeline builds
        its scanner whether or not a market is ever scanned)."""
        return _default_rules() if self._given is None else self._given

    @functools.cached_property
    def version(self) -> str:
        """A digest of the rules and ``block_at``: verdicts stored under another one are not reused."""
        return _rules_version(self.rules, self.block_at)

    @functools.cached_property
    def _compiled(self) -> tuple[_Compiled, ...]:
        """The rules compiled with their needles, on the first scan: about 25 ms that a process
        which never scans (and ``import harness``, which builds the default scanner) should not pay."""
        from harness.skills._rule_starts import starts

        compiled = []
        for rule in self.rules:
            flags = 0 if rule.case_sensitive else re.IGNORECASE
            compiled.append(
                _Compiled(
                    rule, re.compile(rule.pattern, flags), _edged_needles(rule.pattern), starts(rule.pattern, flags)
                )
            )
        return tuple(compiled)

    def scan(self, files: Mapping[str, str | bytes]) -> ScanVerdict:
        """Scan ``{path: content}``; findings come sorted by path and line."""
        from harness.skills._rule_starts import Probe

        findings: list[Finding] = []
        for path in sorted(files):
            text = _as_text(path, files[path])
            if text is not None:
                lines = text.splitlines()
                probed = [(view, Probe(view, _FOLD_TO_ASCII)) for view in _views(lines)]
                findings.extend(self._findings(path, lines, probed, self._compiled))
        return self._verdict(findings)

    def scan_each(self, files: Sequence[tuple[str, str | bytes]]) -> list[ScanVerdict | Exception]:
        """``scan({path: content})`` of each file, in order, or the exception that file's scan
        raised. The same verdicts as one call per file, for less: the files are looked at
        together first, and a rule that none of them can match (most rules, in most groups of
        files) is not tried on any. A subclass that overrides :meth:`scan` has it called per file."""
        if type(self).scan is not Scanner.scan:
            return [_outcome(self.scan, {path: content}) for path, content in files]
        from harness.skills._rule_starts import Probe

        outcomes: list[ScanVerdict | Exception] = []
        for start in range(0, len(files), _GROUP):
            group = []
            for path, content in files[start : start + _GROUP]:
                text = _as_text(path, content)
                lines = [] if text is None else text.splitlines()
                views = [] if text is None else _views(lines)
                group.append((path, lines, views, [Probe(view, _FOLD_TO_ASCII) for view in views]))
            rules = self._possible(
                [(view, probe) for _, _, views, probes in group for view, probe in zip(views, probes)]
            )
            for path, lines, views, probes in group:
                outcomes.append(_outcome(self._scan_file, path, lines, list(zip(views, probes)), rules))
        return outcomes

    def _scan_file(self, path: str, lines: list[str], views: list[_Probed], rules: Iterable[_Compiled]) -> ScanVerdict:
        return self._verdict(self._findings(path, lines, views, rules))

    def _verdict(self, findings: list[Finding]) -> ScanVerdict:
        threshold = _SEVERITY_RANK[self.block_at]
        dangerous = any(_SEVERITY_RANK[f.severity] >= threshold for f in findings)
        return ScanVerdict(dangerous=dangerous, findings=tuple(findings))

    def _possible(self, views: list[_Probed]) -> tuple[_Compiled, ...]:
        """The rules that can match one of ``views``: those whose needles, and everything one of
        their alternatives needs, are in the views joined (what a view holds, they hold)."""
        from harness.skills._rule_starts import Probe

        words = set().union(*(probe.words() for _, probe in views))
        probe = Probe([segment for view, _ in views for segment in view], _FOLD_TO_ASCII, words=words)
        return tuple(
            compiled
            for compiled in self._compiled
            if (compiled.needles is None or probe.has_any(compiled.needles))
            and (compiled.starts is None or any(all(map(probe.has_any, p.anywhere)) for p in compiled.starts))
        )

    def _findings(self, path: str, lines: list[str], views: list[_Probed], rules: Iterable[_Compiled]) -> list[Finding]:
        """Run ``rules`` over every view of a file (see :func:`_views`), each with its probe; one
        finding per rule and line, whichever view found it."""
        seen: dict[tuple[int, str], Finding] = {}
        for view, probe in views:
            for compiled in rules:
                if compiled.needles is not None and not probe.has_any(compiled.needles):
                    continue  # no match is possible without one of them
                for match in probe.matches(compiled.regex, compiled.starts):
                    number = view[probe.line_of(match.start())][0]
                    rule = compiled.rule
                    seen.setdefault(
                        (number, rule.id),
                        Finding(
                            rule=rule.id,
                            category=rule.category,
                            severity=rule.severity,
                            message=rule.message,
                            path=path,
                            line=number,
                            excerpt=lines[number - 1].strip()[:_EXCERPT],
                        ),
                    )
        return sorted(seen.values(), key=lambda f: (f.line, f.rule))


# Files looked at together by :meth:`Scanner.scan_each`: the more, the fewer lookups per file,
# until the group holds most needles anyway.
_GROUP = 32


def _outcome(call: Callable[..., ScanVerdict], *args: Any) -> ScanVerdict | Exception:
    try:
        return call(*args)
    except Exception as exc:  # a broken custom rule costs its file's verdict, nothing more
        return exc


# The non-ASCII characters a case-insensitive ``re`` match treats as an ASCII letter (checked
# against every code point by the tests): folding them first keeps ``probe.lower()`` a superset.
_FOLD_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def needles(pattern: str) -> tuple[str, ...] | None:
    """Lower-case ASCII strings one of which appears in every text ``pattern`` matches
    (case-insensitively or not), or ``None`` when the pattern promises none.

    Read off the parsed pattern: a run of literal characters, a group, a repeat of at least one,
    a lookahead, or an alternation whose every branch promises one; the most selective promise of
    a sequence wins. Rules use it to skip texts that cannot match."""
    found = _edged_needles(pattern)
    from harness.skills._rule_starts import plain  # loaded with the rules, on the first scan

    return None if found is None else tuple(sorted({plain(needle) for needle in found}))


def _edged_needles(pattern: str) -> tuple[str, ...] | None:
    """:func:`needles` with the ends that lie at a word's edge marked (see
    :func:`harness.skills._rule_starts.required_sets`): what the scanner filters with."""
    from harness.skills._rule_starts import best, required_sets  # loaded with the rules, on the first scan

    try:
        parsed = _sre_parser.parse(pattern)
    except re.error:
        return None
    found = best(required_sets(list(parsed)))
    return tuple(sorted(found)) if found else None


def _rules_version(rules: Iterable[ScanRule], block_at: str) -> str:
    """A digest of everything a verdict depends on: each rule's fields and the blocking severity
    (persisted verdicts made under other rules are not reused)."""
    data = json.dumps([block_at, [dataclasses.asdict(rule) for rule in rules]], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _index_of(starts: list[int], offset: int) -> int:
    """The index of the segment that ``offset`` of the joined text falls in."""
    return max(bisect.bisect_right(starts, offset) - 1, 0)


# Normalisation: what a reader (or a shell, or a model) sees is what the rules match, however
# the text was disguised.

_INVISIBLE = dict.fromkeys(
    map(
        ord,
        "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
        "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069"
        "\u3164\ufeff\uffa0",
    ),
    None,
)
# Cyrillic and Greek letters that look like Latin ones (after NFKC).
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁһԛԝӏɑονιυκτχεραАВЕКМНОРСТХУІЈЅԌԚԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧıℓ",
    "aeopcyxijsdhqwlaovinktxepaABEKMHOPCTXYIJSGQWABEZHIKMNOPTYXil",
)
# The patterns below are strings that ``re`` compiles (and caches) on the first scan, not at import.
_SPACED = r"(?<![^\W_])[^\W_](?P<sep>[ ._*~-])[^\W_](?:(?P=sep)[^\W_]){2,}(?![^\W_])"
_BASE64 = r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])"
_HEX = r"(?:\\x[0-9a-fA-F]{2}){6,}|(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){8,}(?![0-9a-fA-F])"
_BLANK = r"[ \t\f\v\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]"
# The runs of blanks that collapsing changes: a lone space is left alone (most of any text).
# Written to begin with the blank itself, so the engine skips every other character in C.
_BLANKS = rf"{_BLANK}(?:{_BLANK}+|(?<! ))"
# An ASCII text needs collapsing only where it holds one of these (indented code does).
_ASCII_BLANKS = ("  ", "\t", "\f", "\v")
# Bytes of the base64 alphabet (and nothing else) as ``a``: a base64 blob needs 16 in a row.
_BASE64_LETTERS = bytes(97 if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/_-") else 32 for b in range(256))
_BASE64_RUN = b"a" * 16
# Bytes of hex digits (and nothing else) as ``0``: a hex blob needs 16 of them in a row.
_HEX_DIGITS = bytes(48 if chr(b) in string.hexdigits else 32 for b in range(256))
# ASCII letters and digits as ``a``, the separators of spaced-out words as a space, the rest as ``#``.
_SPACING = bytes(97 if chr(b).isalnum() and b < 128 else 32 if chr(b) in " ._*~-" else 35 for b in range(256))
_MAX_BLOBS = 64
_MAX_BLOB = 64 * 1024
_MAX_DEPTH = 2


def normalise(text: str) -> str:
    """``text`` as the rules see it: NFKC, invisible characters removed, Cyrillic/Greek
    look-alikes folded to Latin, and runs of spaces and tabs collapsed to one space.

    Never raises, for any string."""
    return _collapse(_fold(text))


def _fold(text: str) -> str:
    if text.isascii():
        return text  # NFKC keeps ASCII, and every invisible or look-alike character is not
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE).translate(_CONFUSABLES)


def _collapse(text: str) -> str:
    if text.isascii() and not any(blank in text for blank in _ASCII_BLANKS):
        return text
    return re.sub(_BLANKS, " ", text)


def despace(text: str) -> str:
    """``text`` with spaced-out words joined (``i g n o r e`` → ``ignore``, ``i.g.n.o.r.e`` too)."""
    if text.isascii():
        # A spaced-out word is four letters or more, each alone between one separator (any
        # separator here: one search instead of one per separator).
        if b"a a a a" not in text.encode("ascii").translate(_SPACING):
            return text
    return re.sub(_SPACED, lambda m: m.group(0).replace(m.group("sep"), ""), text)


def decoded_blobs(text: str) -> list[str]:
    """The readable text hidden in ``text``'s base64 and hex blobs (at most a few dozen)."""
    return _decode([*re.finditer(_BASE64, text), *re.finditer(_HEX, text)][:_MAX_BLOBS])


def _decode(matches: list[re.Match[str]]) -> list[str]:
    found: list[str] = []
    for match in matches:
        decoded = _decoded_one(match.group(0))
        if decoded:
            found.append(decoded)
    return found


def _decoded_one(blob: str) -> str | None:
    """The readable text ``blob`` (or its first ``_MAX_BLOB`` characters) decodes to, if any."""
    blob = blob[:_MAX_BLOB]
    return _decoded_short(blob) if len(blob) <= _SHORT_BLOB else _decoded(blob)


def _decoded(blob: str) -> str | None:
    """The readable text ``blob`` decodes to, if any."""
    data = _unhex(blob) if blob.startswith("\\x") or re.fullmatch(_HEX, blob) else _unbase64(blob)
    return _readable(data) if data else None


# Short blobs are mostly paths and names (``references/guide``) that come back line after line
# and file after file: each is decoded once.
_SHORT_BLOB = 128
_decoded_short = functools.lru_cache(maxsize=4096)(_decoded)


def _unbase64(blob: str) -> bytes | None:
    blob = blob.rstrip("=")
    try:
        return base64.b64decode(blob + "=" * (-len(blob) % 4), altchars=b"-_" if "-" in blob or "_" in blob else None)
    except (binascii.Error, ValueError):
        return None


def _unhex(blob: str) -> bytes | None:
    try:
        return bytes.fromhex(blob.replace("\\x", ""))
    except ValueError:
        return None


def _readable(data: bytes) -> str | None:
    """``data`` as text when it is mostly printable UTF-8 (a hidden command, not binary)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text and text.translate(_LINE_BREAKS).isprintable():
        return text  # every character counts (most decoded blobs): no need to count them
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t\r")
    return text if text and printable >= 0.95 * len(text) else None


_LINE_BREAKS = str.maketrans("", "", "\n\t\r")


def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """``(first line number, text)`` per shell line: a trailing backslash joins the next line."""
    if "\\\n" not in "\n".join(lines) + "\n":
        return list(enumerate(lines, start=1))  # no line ends with a backslash (most texts)
    logical: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, start=1):
        if pending is not None:
            number, line = pending[0], pending[1] + line
        pending = (number, line[:-1]) if line.endswith("\\") else None
        if pending is None:
            logical.append((number, line))
    if pending is not None:
        logical.append(pending)
    return logical


View = list[tuple[int, str]]
_Probed = tuple[View, "Probe"]


def _views(lines: list[str], depth: int = 0) -> list[View]:
    """The texts the rules run over, each a list of ``(original line number, text)``: the
    normalised text, the same with spaced-out words joined, and what base64/hex blobs decode
    to (decoded recursively, a couple of levels deep)."""
    logical_lines = _logical_lines(lines)
    numbers = [number for number, _ in logical_lines]
    folded = _per_line(_fold, [text for _, text in logical_lines])
    collapsed = _per_line(_collapse, folded)
    logical = list(zip(numbers, collapsed, strict=True))
    views = [logical]
    # Before collapsing: a wider gap between spaced-out words keeps the words apart.
    despaced = _per_line(despace, folded)
    joined = collapsed if despaced == folded else _per_line(_collapse, despaced)
    if joined != collapsed:
        views.append(list(zip(numbers, joined, strict=True)))
    if depth < _MAX_DEPTH:
        for index, decoded_texts in _blobs_by_line(collapsed):
            for decoded in decoded_texts:
                for view in _views(decoded.splitlines(), depth + 1):
                    views.append([(numbers[index], text) for _, text in view])
    return views


def _per_line(transform: Callable[[str], str], texts: list[str]) -> list[str]:
    """``transform`` of each text, computed once over the texts joined by newlines: no step of
    the normalisation matches, makes or removes a newline, or joins characters across one (a
    newline is a starter that never composes), so the pieces are the per-line results. The
    count is checked all the same; on a mismatch each text is transformed alone. A step that
    changes nothing (most steps, over most texts) returns ``texts`` itself."""
    if len(texts) < 2:
        return [transform(text) for text in texts]
    joined = "\n".join(texts)
    changed = transform(joined)
    if changed == joined:
        return texts
    pieces = changed.split("\n")
    return pieces if len(pieces) == len(texts) else [transform(text) for text in texts]


def _hex_blobs(text: str) -> list[re.Match[str]]:
    """``_HEX``'s matches in ``text``, found without running it over texts that hold neither
    ``\\x`` nor 16 hex digits in a row (most texts: the pattern is slow over prose)."""
    if "\\x" not in text and b"0" * 16 not in text.encode("utf-8", "surrogatepass").translate(_HEX_DIGITS):
        return []
    return list(re.finditer(_HEX, text))


def _may_hold_base64(text: str) -> bool:
    """Whether ``text`` holds 16 base64 letters in a row, as every ``_BASE64`` match does (a
    translation and one search, where the pattern itself is slow over prose)."""
    return _BASE64_RUN in text.encode("utf-8", "surrogatepass").translate(_BASE64_LETTERS)


def _base64_blobs(text: str) -> Iterable[re.Match[str]]:
    """``_BASE64``'s matches in ``text``: in an ASCII text, tried only where a run of 16 base64
    letters starts (a match starts nowhere else, and finds the same there as ``finditer``)."""
    if not text.isascii():
        return re.finditer(_BASE64, text)
    pattern = re.compile(_BASE64)
    shape = text.encode("ascii").translate(_BASE64_LETTERS)
    found = []
    at = shape.find(_BASE64_RUN)
    while at >= 0:
        match = pattern.match(text, at)
        if match is not None:
            found.append(match)
        end = shape.find(b" ", at)
        at = shape.find(_BASE64_RUN, end) if end >= 0 else -1
    return found


def _blobs_by_line(texts: list[str]) -> list[tuple[int, list[str]]]:
    """What :func:`decoded_blobs` finds in each text, as ``(index, decoded)`` for the texts with
    any: the blob patterns run once over the joined texts (no blob spans a newline) and the
    matches are grouped back by line, each line keeping its own limit."""
    whole = "\n".join(texts)
    hexes = _hex_blobs(whole)
    if not hexes and not _may_hold_base64(whole):
        return []
    base64s = list(_base64_blobs(whole))
    if not any(map(_decoded_one, {m.group(0) for m in (*base64s, *hexes)})):
        return []  # no blob reads as text (most texts: their blobs are paths and names)
    starts = [0, *itertools.accumulate([len(text) + 1 for text in texts[:-1]])]
    by_line: dict[int, tuple[list[re.Match[str]], list[re.Match[str]]]] = {}
    for kind, matches in enumerate((base64s, hexes)):
        for match in matches:
            by_line.setdefault(_index_of(starts, match.start()), ([], []))[kind].append(match)
    found = []
    for index in sorted(by_line):
        base64_matches, hex_matches = by_line[index]
        decoded = _decode([*base64_matches, *hex_matches][:_MAX_BLOBS])
        if decoded:
            found.append((index, decoded))
    return found


# Binary formats by their leading bytes, each with the file name endings it comes under. A file
# is skipped only when both agree: a script that starts like a PNG but is named ``setup.sh`` is
# still read as text (``run-disguised-file`` watches for a ``logo.png`` run as a script).
_BINARY_FORMATS: tuple[tuple[bytes, frozenset[str]], ...] = tuple(
    (magic, frozenset(suffixes.split()))
    for magic, suffixes in (
        (b"\x89PNG\r\n\x1a\n", ".png"),
        (b"\xff\xd8\xff", ".jpg .jpeg"),
        (b"GIF8", ".gif"),
        (b"RIFF", ".webp .wav .avi"),
        (b"%PDF-", ".pdf"),
        (b"PK\x03\x04", ".zip .jar .whl .docx .xlsx .pptx .odt .ods .odp .epub"),
        (b"\x1f\x8b", ".gz .tgz"),
        (b"BZh", ".bz2"),
        (b"\xfd7zXZ\x00", ".xz"),
        (b"wOFF", ".woff"),
        (b"wOF2", ".woff2"),
        (b"\x00\x01\x00\x00", ".ttf"),
        (b"OTTO", ".otf"),
        (b"\x00\x00\x01\x00", ".ico"),
        (b"ID3", ".mp3"),
        (b"SQLite format 3\x00", ".db .sqlite .sqlite3"),
        (b"\x00asm", ".wasm"),
        (b"\x7fELF", ". .so .o .bin"),  # ``.``: no ending, as executables are usually named
    )
)
BINARY_SUFFIXES = frozenset().union(*(suffixes for _, suffixes in _BINARY_FORMATS)) - {"."}
"""File name endings of the binary formats the scanner skips (by content, see :func:`is_binary`)."""


def is_binary(path: str, data: bytes) -> bool:
    """Whether ``data`` is a binary file the scanner skips: it starts like a known binary format
    (image, archive, font, document, database, executable) *and* ``path`` ends the way that
    format is named. Anything else is text, whatever bytes it holds."""
    suffix = PurePosixPath(path).suffix.lower() or "."
    return any(data.startswith(magic) and suffix in suffixes for magic, suffixes in _BINARY_FORMATS)


def _as_text(path: str, content: str | bytes) -> str | None:
    """What the rules read of a file: ``None`` for a binary (see :func:`is_binary`), else its
    text with NUL bytes dropped (``dash`` drops them too, and ``bash`` only refuses a script with
    one in its first line, so a NUL must not hide a script)."""
    if isinstance(content, str):
        return content.replace("\x00", "")
    if is_binary(path, content):
        return None
    return content.replace(b"\x00", b"").decode("utf-8", errors="replace")


_DEFAULT_SCANNER = Scanner()  # its rules are built on the first scan
DEFAULT_SCAN_LIMIT = 1024 * 1024
"""The largest market file scanned on ingest (bytes), see :class:`MarketScanPolicy`."""


def scan(files: Mapping[str, str | bytes]) -> ScanVerdict:
    """Scan ``{path: content}`` with the built-in rules (see :class:`Scanner`)."""
    return _DEFAULT_SCANNER.scan(files)


class TrustLevel(enum.Enum):
    """How much a market source is trusted when its skills are ingested."""

    TRUSTED = "trusted"
    """Not scanned."""
    REPORT = "report"
    """Scanned; findings are reported, the skill is still admitted (the default)."""
    ENFORCE = "enforce"
    """Scanned; a dangerous verdict keeps the skill out."""


@dataclass(frozen=True, kw_only=True)
class IngestVerdict:
    """What ingesting one market skill decided: its source's trust, the verdict, admitted or not."""

    source: str
    trust: TrustLevel
    verdict: ScanVerdict
    admitted: bool


@dataclass(frozen=True, kw_only=True)
class MarketScanPolicy:
    """Per-source trust for scanning market skills on ingest.

    ``sources`` maps a repository's source slug to its :class:`TrustLevel`; other sources get
    ``default`` (report-only). A scanned skill is scanned whole: its main file and every other
    file up to ``scan_limit`` bytes (binaries skipped, see :func:`is_binary`). A larger file that
    is not named as a binary format cannot be judged: it is reported, and a blocking source keeps
    the skill out.
    """

    scanner: Scanner = field(default_factory=Scanner)
    default: TrustLevel = TrustLevel.REPORT
    sources: Mapping[str, TrustLevel] = field(default_factory=dict)
    scan_limit: int = DEFAULT_SCAN_LIMIT

    def __post_init__(self) -> None:
        if self.scan_limit <= 0:
            raise ValueError(f"scan_limit must be a positive number of bytes, not {self.scan_limit!r}")

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MarketScanPolicy:
        """The policy ``harness.yaml``'s ``market_scan`` key describes:
        ``{default: report, sources: {git-acme-skills: block, pkg-ours: off}, scan_limit: 1048576}``.

        Levels are ``report``, ``block`` (or ``enforce``) and ``off`` (or ``trusted``); raises
        ``ValueError`` naming the bad key or level."""
        unknown = set(data) - {"default", "sources", "scan_limit"}
        if unknown:
            raise ValueError(
                f"unknown keys {', '.join(sorted(map(str, unknown)))} (known: default, sources, scan_limit)"
            )
        limit = data.get("scan_limit", DEFAULT_SCAN_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise ValueError(f"scan_limit must be a number of bytes, not {limit!r}")
        sources = data.get("sources") or {}
        if not isinstance(sources, Mapping):
            raise ValueError("sources must map a market's source slug to report, block or off")
        return cls(
            default=_trust_level("default", data.get("default", "report")),
            sources={str(name): _trust_level(f"sources.{name}", level) for name, level in sources.items()},
            scan_limit=limit,
        )

    def trust_of(self, source: str) -> TrustLevel:
        """The trust level configured for ``source``."""
        return self.sources.get(source, self.default)

    def trusts(self, source: str) -> bool:
        """Whether ``source``'s skills are admitted unscanned (``off``)."""
        return self.trust_of(source) is TrustLevel.TRUSTED

    def blocks(self, source: str) -> bool:
        """Whether a dangerous verdict keeps ``source``'s skills out (``block``)."""
        return self.trust_of(source) is TrustLevel.ENFORCE

    def check(
        self, source: str, files: Mapping[str, str | bytes], *, known: ScanVerdict | None = None
    ) -> IngestVerdict:
        """Scan one market skill's files as ``source``'s trust level says. ``known`` is this
        scanner's verdict on the very same files when the caller kept one (it is not rescanned)."""
        trust = self.trust_of(source)
        if trust is TrustLevel.TRUSTED:
            return IngestVerdict(source=source, trust=trust, verdict=ScanVerdict(dangerous=False), admitted=True)
        verdict = known if known is not None else self.scanner.scan(files)
        admitted = not (trust is TrustLevel.ENFORCE and verdict.dangerous)
        return IngestVerdict(source=source, trust=trust, verdict=verdict, admitted=admitted)


_TRUST_WORDS = {
    "report": TrustLevel.REPORT,
    "block": TrustLevel.ENFORCE,
    "enforce": TrustLevel.ENFORCE,
    "off": TrustLevel.TRUSTED,
    "trusted": TrustLevel.TRUSTED,
}


def _trust_level(key: str, value: object) -> TrustLevel:
    # YAML reads a bare ``off`` as False.
    word = "off" if value is False else str(value).lower()
    if word not in _TRUST_WORDS:
        raise ValueError(f"{key}: {value!r} is not one of report, block, off")
    return _TRUST_WORDS[word]
