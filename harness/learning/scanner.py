"""A rule-based scanner for dangerous content in skill files.

Rules are data — a regular expression, a category, a severity and a message — so extending the
scanner means adding a :class:`ScanRule` (or a dict through :func:`rules_from_data`), not code.
Agent-written content is scanned *before* it is written; a verdict is dangerous when a finding
reaches the scanner's blocking severity. The same scanner runs over market skills on ingest,
where each source gets a :class:`TrustLevel` (report-only by default).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_RULES",
    "Finding",
    "IngestVerdict",
    "MarketScanPolicy",
    "ScanRule",
    "ScanVerdict",
    "Scanner",
    "Severity",
    "TrustLevel",
    "rules_from_data",
    "scan",
]

Severity = Literal["low", "medium", "high", "critical"]
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
        return {
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True, kw_only=True)
class ScanVerdict:
    """The outcome of a scan: ``dangerous`` when a finding reached the blocking severity."""

    dangerous: bool
    findings: tuple[Finding, ...] = ()

    def summary(self) -> str:
        """One line per finding, for refusal messages."""
        return "; ".join(
            f"{f.path}:{f.line}: {f.category} ({f.severity}): {f.message}" for f in self.findings
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape used in audit records and tool replies."""
        return {"dangerous": self.dangerous, "findings": [f.as_dict() for f in self.findings]}


def _rule(id: str, category: str, severity: Severity, pattern: str, message: str) -> ScanRule:
    return ScanRule(id=id, category=category, severity=severity, pattern=pattern, message=message)


_SECRET_VARS = r"\$\{?[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)"
_SHELLS = r"(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b"

DEFAULT_RULES: tuple[ScanRule, ...] = (
    _rule("exfil-secret-upload", "exfiltration", "critical",
          rf"\b(?:curl|wget|nc|ncat|http)\b[^\n]*{_SECRET_VARS}",
          "sends a secret-looking environment variable over the network"),
    _rule("exfil-env-dump", "exfiltration", "critical",
          r"\b(?:env|printenv|set)\b\s*\|\s*(?:curl|wget|nc|ncat|socat)\b",
          "pipes the whole environment to a network tool"),
    _rule("exfil-credential-files", "exfiltration", "high",
          r"(?:~|\$HOME|/root|/home/[^/\s]+)/\.(?:ssh|aws|gnupg|netrc|docker/config\.json|kube/config)"
          r"|/etc/shadow|\bid_(?:rsa|ed25519|ecdsa)\b",
          "reads credential files (SSH keys, cloud credentials, /etc/shadow)"),
    _rule("exfil-upload-file", "exfiltration", "high",
          r"\bcurl\b[^\n]*(?:--upload-file|-T\s|-F\s*['\"]?\w+=@|--data(?:-binary)?\s*['\"]?@)"
          r"|\bwget\b[^\n]*--post-file",
          "uploads a local file to a remote server"),
    _rule("exfil-python-environ-post", "exfiltration", "critical",
          r"requests\.(?:post|put)\([^\n]*os\.environ|urlopen\([^\n]*os\.environ",
          "posts the process environment to a remote server"),
    _rule("destructive-rm-root", "destructive", "critical",
          r"\brm\s+(?:-[a-z]*\s+)*-[a-z]*[rf][a-z]*\s+(?:-[a-z]*\s+)*"
          r"(?:/|/\*|~/?|\$HOME/?|\*|\.\*?)(?=\s|$|;|&|\|)",
          "recursively deletes the root, home or current folder"),
    _rule("destructive-mkfs", "destructive", "critical", r"\bmkfs(?:\.\w+)?\s+/dev/",
          "formats a block device"),
    _rule("destructive-dd-device", "destructive", "critical", r"\bdd\b[^\n]*\bof=/dev/(?:sd|nvme|hd|vd|xvd|mmcblk)",
          "overwrites a block device"),
    _rule("destructive-fork-bomb", "destructive", "critical", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
          "is a fork bomb"),
    _rule("destructive-chmod-root", "destructive", "high", r"\bchmod\s+(?:-[a-z]*R[a-z]*\s+)\S+\s+/(?:\s|$)",
          "recursively changes permissions of the whole filesystem"),
    _rule("destructive-rmtree-root", "destructive", "critical",
          r"shutil\.rmtree\(\s*(?:['\"](?:/|~)['\"]|os\.path\.expanduser\(\s*['\"]~['\"]\s*\))",
          "recursively deletes the root or home folder"),
    _rule("destructive-drop-database", "destructive", "high", r"\bdrop\s+(?:database|schema)\b",
          "drops a whole database"),
    _rule("reverse-shell-dev-tcp", "reverse-shell", "critical", r"/dev/(?:tcp|udp)/[^\s/]+/\d+",
          "opens a shell connection through /dev/tcp"),
    _rule("reverse-shell-netcat-exec", "reverse-shell", "critical",
          r"\b(?:nc|ncat|netcat)\b[^\n]*\s-(?:e|c)\s*\S*(?:sh|bash|cmd)\b",
          "hands a shell to a network connection (netcat -e)"),
    _rule("reverse-shell-socat", "reverse-shell", "critical", r"\bsocat\b[^\n]*exec:[^\n]*(?:sh|bash)",
          "hands a shell to a network connection (socat exec)"),
    _rule("reverse-shell-fifo", "reverse-shell", "critical", r"\bmkfifo\b[^\n]*\|\s*(?:nc|ncat|netcat)\b",
          "wires a shell to netcat through a named pipe"),
    _rule("reverse-shell-python-socket", "reverse-shell", "critical",
          r"socket\.socket\([^\n]*(?:\n[^\n]*)?(?:dup2|pty\.spawn|subprocess\.call\(\[?['\"]/bin/(?:ba)?sh)"
          r"|pty\.spawn\(\s*['\"]/bin/(?:ba)?sh",
          "connects a socket to an interactive shell"),
    _rule("pipe-to-shell", "pipe-to-shell", "critical",
          rf"\b(?:curl|wget|fetch)\b[^\n|]*\|\s*{_SHELLS}",
          "pipes downloaded code straight into a shell"),
    _rule("pipe-to-interpreter", "pipe-to-shell", "high",
          r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node)\b",
          "pipes downloaded code straight into an interpreter"),
    _rule("process-substitution-download", "pipe-to-shell", "critical",
          r"\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\bsource\s+<\(\s*(?:curl|wget)\b",
          "runs downloaded code through process substitution"),
    _rule("powershell-download-exec", "pipe-to-shell", "critical",
          r"\b(?:iex|invoke-expression)\b[^\n]*(?:iwr|invoke-webrequest|downloadstring|net\.webclient)",
          "runs downloaded PowerShell code"),
    _rule("injection-ignore-instructions", "prompt-injection", "high",
          r"\b(?:ignore|disregard|forget|override)\b[^\n.]{0,40}\b(?:previous|prior|above|earlier|all|system|your)\b"
          r"[^\n.]{0,20}\b(?:instructions|prompts?|rules|guidelines|directives)\b",
          "tries to override the agent's instructions"),
    _rule("injection-reveal-prompt", "prompt-injection", "high",
          r"\b(?:reveal|print|show|output|repeat|leak)\b[^\n.]{0,30}\b(?:system prompt|hidden instructions|developer message)\b",
          "tries to extract the system prompt"),
    _rule("injection-hide-from-user", "prompt-injection", "high",
          r"\b(?:do not|don't|never)\s+(?:tell|inform|mention|reveal)\b[^\n.]{0,30}\b(?:the user|anyone)\b",
          "tells the agent to hide its actions from the user"),
    _rule("injection-role-hijack", "prompt-injection", "high",
          r"\byou are now\b[^\n.]{0,40}\b(?:unrestricted|jailbroken|dan|developer mode|no longer bound)\b",
          "tries to switch the agent into an unrestricted role"),
    _rule("injection-fake-system-tag", "prompt-injection", "medium",
          r"<\s*/?\s*(?:system|system-prompt|im_start|\|im_start\|)\s*>",
          "imitates a system or chat-template tag"),
)
"""The built-in rules; pass your own tuple (e.g. ``(*DEFAULT_RULES, my_rule)``) to extend them."""


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
    rule: ScanRule
    regex: re.Pattern[str]


class Scanner:
    """Scans skill files with a fixed set of rules.

    ``block_at`` is the lowest severity that makes a verdict dangerous (default ``"high"``):
    lower findings are still reported. Binary files (containing NUL bytes) are skipped.
    """

    def __init__(self, rules: Iterable[ScanRule] = DEFAULT_RULES, *, block_at: Severity = "high") -> None:
        if block_at not in _SEVERITY_RANK:
            raise ValueError(f"block_at must be one of {sorted(_SEVERITY_RANK)}")
        self.rules = tuple(rules)
        ids = [rule.id for rule in self.rules]
        if len(ids) != len(set(ids)):
            raise ValueError("scan rule ids must be unique")
        self.block_at: Severity = block_at
        self._compiled = tuple(
            _Compiled(rule, re.compile(rule.pattern, 0 if rule.case_sensitive else re.IGNORECASE))
            for rule in self.rules
        )

    def scan(self, files: Mapping[str, str | bytes]) -> ScanVerdict:
        """Scan ``{path: content}``; findings come sorted by path and line."""
        findings: list[Finding] = []
        for path in sorted(files):
            text = _as_text(files[path])
            if text is not None:
                findings.extend(self._scan_text(path, text))
        threshold = _SEVERITY_RANK[self.block_at]
        dangerous = any(_SEVERITY_RANK[f.severity] >= threshold for f in findings)
        return ScanVerdict(dangerous=dangerous, findings=tuple(findings))

    def _scan_text(self, path: str, text: str) -> list[Finding]:
        lines = text.splitlines()
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        joined = "\n".join(lines)
        found: list[Finding] = []
        for compiled in self._compiled:
            for match in compiled.regex.finditer(joined):
                number = _line_of(starts, match.start())
                rule = compiled.rule
                found.append(
                    Finding(
                        rule=rule.id,
                        category=rule.category,
                        severity=rule.severity,
                        message=rule.message,
                        path=path,
                        line=number,
                        excerpt=lines[number - 1].strip()[:_EXCERPT],
                    )
                )
        return sorted(found, key=lambda f: (f.line, f.rule))


def _line_of(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low + 1


def _as_text(content: str | bytes) -> str | None:
    if isinstance(content, str):
        return content
    if b"\x00" in content:
        return None
    return content.decode("utf-8", errors="replace")


_DEFAULT_SCANNER = Scanner()


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
    ``default`` (report-only).
    """

    scanner: Scanner = field(default_factory=Scanner)
    default: TrustLevel = TrustLevel.REPORT
    sources: Mapping[str, TrustLevel] = field(default_factory=dict)

    def trust_of(self, source: str) -> TrustLevel:
        """The trust level configured for ``source``."""
        return self.sources.get(source, self.default)

    def check(self, source: str, files: Mapping[str, str | bytes]) -> IngestVerdict:
        """Scan one market skill's files as ``source``'s trust level says."""
        trust = self.trust_of(source)
        if trust is TrustLevel.TRUSTED:
            return IngestVerdict(source=source, trust=trust, verdict=ScanVerdict(dangerous=False), admitted=True)
        verdict = self.scanner.scan(files)
        admitted = not (trust is TrustLevel.ENFORCE and verdict.dangerous)
        return IngestVerdict(source=source, trust=trust, verdict=verdict, admitted=admitted)
