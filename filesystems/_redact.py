"""Masking credentials in URLs and DSNs before they reach a message, log, diagnostic or output.

One helper for every package: ``repositories`` and ``harness`` both import it from here. The
rules:

- a DSN's password is masked, its user kept (``mysql://harness:***@db:3306/x``): for
  ``mysql``/``mariadb`` and SSH-style schemes the user name is not a secret;
- any other URL's whole user part is masked (``https://***@github.com/acme/skills.git``),
  because HTTPS hosts take a bare token as the user name;
- query-string and fragment credentials (``password=``, ``token=``, ``access_token=``, …) are
  masked (``?password=***``);
- in free text, ``password=…``-style values are masked too, but not a placeholder that only
  shows where a value goes (``pass api_key=...``), and a closing bracket
  that ends the surrounding text stays (``(using password: ***)``).

Parsing is done on the string, never with ``urllib.parse.urlsplit``, so a malformed URL (a bad
port, a stray ``[``) is masked too instead of raising.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["MASK", "redact_secrets", "redact_url", "url_credentials"]

MASK = "***"

# The patterns are strings that ``re`` compiles (and caches) on first use: most programs never
# redact anything, and compiling them all costs about a millisecond of every import.
# Schemes whose user name is an account name, not a credential.
_KEEP_USER = r"(?i)^(?:mysql|mariadb|(?:git\+)?ssh|sftp|postgres(?:ql)?)(?:\+\w+)?$"
_CREDENTIAL_KEYS = (
    r"(?i)(?P<key>(?:^|(?<=[?&#;]))(?:password|passwd|pwd|pass|token|access_token|auth_token|api_key|apikey"
    r"|secret|client_secret|private_token)=)(?P<value>[^&#;\s]*)"
)
_SCP_LIKE = r"(?P<user>[^@/:\s]+):[^@/\s]*@(?=[^/:\s]+:)"
# A URL in free text: scheme://… up to whitespace, a quote or a closing bracket.
_URL_IN_TEXT = r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s'\"<>()\[\]{}`]+"
# ``name=value`` credentials outside URLs (``password=…`` in a command line or error).
_BARE_CREDENTIAL = (
    r"(?i)(?P<key>\b(?:password|passwd|token|access_token|api_key|client_secret)\s*[=:]\s*)(?P<value>[^\s&,;'\"]+)"
)


def redact_url(url: str) -> str:
    """``url`` with its credentials masked (see the module docstring); never raises.

    A string without ``scheme://`` is returned with only its query-style credentials masked.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scp = re.match(_SCP_LIKE, url)
        if scp:  # git's ``user:secret@host:path`` form
            url = f"{scp.group('user')}:{MASK}@{url[scp.end() :]}"
        return re.sub(_CREDENTIAL_KEYS, _mask_value, url)
    end = len(rest)
    for stop in "/?#":
        index = rest.find(stop)
        if index != -1:
            end = min(end, index)
    netloc, tail = rest[:end], rest[end:]
    userinfo, at, host = netloc.rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        if re.match(_KEEP_USER, scheme):
            userinfo = f"{user}:{MASK}" if colon else user
        else:
            userinfo = MASK
        netloc = f"{userinfo}@{host}"
    elif ":" in netloc and not netloc.startswith("["):
        # ``user:password`` with the ``@host`` forgotten reads as a host with a non-numeric port.
        host, _, port = netloc.partition(":")
        if port and not port.isdigit():
            netloc = f"{host}:{MASK}"
    return f"{scheme}://{netloc}{re.sub(_CREDENTIAL_KEYS, _mask_value, tail)}"


def url_credentials(url: str) -> tuple[str, ...]:
    """The secret parts of ``url``'s user part (the password, or a user that
    :func:`redact_url` masks), raw and percent-decoded, for :func:`redact_secrets`."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, _ = rest.split("/", 1)[0].rpartition("@")
    scp = None if sep else re.match(_SCP_LIKE, url)
    if scp:
        return (url[: scp.end() - 1].partition(":")[2],)
    if not (sep and at):
        return ()
    user, colon, password = userinfo.partition(":")
    found = [password] if colon else []
    if not re.match(_KEEP_USER, scheme):
        found.append(user)
    return tuple({*found, *(urllib.parse.unquote(part) for part in found)} - {""})


def redact_secrets(text: str, *secrets: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, ``password=…``-style
    values masked, and each of ``secrets`` (e.g. a password known to the caller) replaced."""
    text = re.sub(_URL_IN_TEXT, lambda m: redact_url(m.group(0)), text)
    text = re.sub(_BARE_CREDENTIAL, _mask_bare_value, text)
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, MASK)
    return text


def _mask_value(match: re.Match[str]) -> str:
    return f"{match.group('key')}{MASK}" if match.group("value") else match.group(0)


# What stands for a value in a hint rather than being one: three dots or an ellipsis.
_PLACEHOLDER = r"\.{3,}|\u2026"


def _mask_bare_value(match: re.Match[str]) -> str:
    """Mask a ``password=…`` value found in free text, keeping a placeholder (it is a hint,
    not a secret) and the closing brackets the text around it opened, not the value."""
    value = match.group("value")
    if re.fullmatch(_PLACEHOLDER, value):
        return match.group(0)
    kept = ""
    while value and value[-1] in ")]}" and value.count(value[-1]) > value.count(_OPENING[value[-1]]):
        value, kept = value[:-1], value[-1] + kept
    return f"{match.group('key')}{MASK}{kept}" if value else match.group(0)


_OPENING = {")": "(", "]": "[", "}": "{"}
