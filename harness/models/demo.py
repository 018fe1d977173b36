"""``DemoModel``: a deterministic offline model that uses skills the way a real model would.

It reads the ``<available_skills>`` catalog from the system prompt, picks the skill whose name
and description share the most words with the user's request, loads it with
``load_skill_through_path``, runs the script command its SKILL.md names through
``execute_shell_command`` (when that tool is offered and the skill has a ``<files-root>``), and
answers with a short summary that quotes the script's output. It needs no network and no SDK,
and it keeps no state: every step is derived from the conversation it is given, so one instance
can serve many users at once.
"""

from __future__ import annotations

import html
import re
import shlex
from dataclasses import dataclass

from harness.models.base import Message, Model, ModelReply, ToolCall, ToolSpec, Usage

__all__ = ["DemoModel"]

LOAD_TOOL = "load_skill_through_path"
SHELL_TOOL = "execute_shell_command"

# The catalog's explicit entries, and the compact form's groups and their described skills (see
# harness.pipeline.catalog).
_EXPLICIT = re.compile(
    r"<skill(?: [^>]*)?>\n<name>([^<]*)</name>\n<description>([^<]*)</description>\n"
    r"<skill-id>([^<]*)</skill-id>\n(?:<files-root>([^<]*)</files-root>\n)?</skill>"
)
_GROUP = re.compile(r"<skills ([^>]*)>(.*?)</skills>", re.DOTALL)
_SKILL_ENTRY = re.compile(r"<skill ([^>]*?)(?<!/)>(.*?)</skill>", re.DOTALL)
_ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')
_INVOKED = re.compile(r'<skill name="([^"]*)" location="([^"]*)">(.*?)</skill>(.*)', re.DOTALL)
# A script command in SKILL.md: an optional interpreter, any path prefix (a placeholder such as
# "{files-root}/" or "./"), a script under scripts/, then its arguments up to a backtick.
_COMMAND = re.compile(
    r"(?:\b(python3?|bash|sh|node|ruby|perl)\s+)?[^\s`'\"]*?"
    r"(scripts/[\w./-]+\.(?:py|sh|bash|js|mjs|rb|pl))\b([^`\n]*)"
)
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
# ``<text>`` or ``{text}``; a quoted placeholder is replaced quotes and all.
_PLACEHOLDER = re.compile(r"([\"']?)(?:<[^<>\s][^<>]*>|\{[^{}\s][^{}]*\})\1")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are as asks at be by can could do for from how i in is it me my of on or please "
    "should that the this to use used user uses using want what when which with would you your".split()
)
_MAX_STEPS = 4
_MAX_OUTPUT = 2000


@dataclass(frozen=True, kw_only=True)
class _CatalogSkill:
    name: str
    description: str
    skill_id: str
    files_root: str | None


class DemoModel(Model):
    """Deterministic offline model for demos and examples (see the module docstring).

    It only calls the two tools named in the catalog's contract, ``load_skill_through_path``
    (argument ``skillId``) and ``execute_shell_command`` (argument ``command``), and only when
    they are among the tools offered. A request that matches no skill gets a plain answer
    listing the skills it knows. Token usage is estimated (four characters per token).
    :meth:`stream` delivers the reply word by word.
    """

    _word_deltas = True

    def __init__(self, *, name: str = "demo") -> None:
        super().__init__(name=name)

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        offered = {spec.name for spec in tools}
        reply = _next_message(messages, offered)
        prompt_chars = sum(len(m.content) for m in messages)
        return ModelReply(
            message=reply,
            usage=Usage(
                input_tokens=prompt_chars // 4,
                output_tokens=(len(reply.content) + len(str(reply.tool_calls))) // 4,
            ),
        )


def _next_message(messages: tuple[Message, ...], offered: set[str]) -> Message:
    user_turns = [i for i, m in enumerate(messages) if m.role == "user"]
    if not user_turns:
        return Message.assistant("Hello! Ask me something and I will look for a skill that fits.")
    last_user = user_turns[-1]
    request = messages[last_user].content
    turn = messages[last_user + 1 :]
    calls = [call for m in turn for call in m.tool_calls]
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    next_id = f"demo_call_{sum(len(m.tool_calls) for m in messages) + 1}"
    catalog = _catalog(messages)

    invoked = _INVOKED.search(request)
    if invoked is not None:
        name, location, body, arguments = (html.unescape(g) for g in invoked.groups())
        root = location if location.startswith("/") else None
        if not calls:
            return _run_or_summarise(name, body, root, arguments, offered, next_id)
        return _final(name, calls[-1], results.get(calls[-1].id, ""))

    if not calls:
        skill = _best_match(request, catalog)
        if skill is None:
            return Message.assistant(_no_match(catalog))
        if LOAD_TOOL not in offered:
            return Message.assistant(f"The skill {skill.name} fits: {skill.description}")
        return Message.assistant(
            f"Loading the {skill.name} skill.",
            [ToolCall(id=next_id, name=LOAD_TOOL, arguments={"skillId": skill.skill_id})],
        )

    last = calls[-1]
    result = results.get(last.id, "")
    if last.name == LOAD_TOOL and len(calls) < _MAX_STEPS:
        skill_id = str(last.arguments.get("skillId", ""))
        skill = next((s for s in catalog if skill_id in (s.skill_id, s.name)), None)
        body = _skill_body(skill_id, result, messages)
        name = skill.name if skill else skill_id
        root = skill.files_root if skill else None
        return _run_or_summarise(name, body, root, request, offered, next_id)
    return _final(_skill_name_of(calls, catalog), last, result)


def _run_or_summarise(name: str, body: str, root: str | None, request: str, offered: set[str], next_id: str) -> Message:
    """Call the skill's script when there is one and a shell to run it, else summarise it."""
    command = _script_command(body, root, request) if root else None
    if command is None or SHELL_TOOL not in offered:
        return Message.assistant(f"Skill {name}: {_summary(body)}")
    return Message.assistant(
        f"Running the {name} script.",
        [ToolCall(id=next_id, name=SHELL_TOOL, arguments={"command": command})],
    )


def _final(name: str, call: ToolCall, result: str) -> Message:
    if call.name == SHELL_TOOL:
        output = result.strip()
        if len(output) > _MAX_OUTPUT:
            output = output[:_MAX_OUTPUT] + " …"
        return Message.assistant(
            f"Used the {name} skill: ran `{call.arguments.get('command', '')}`.\nOutput:\n{output}"
        )
    return Message.assistant(f"Used the {name} skill. Result:\n{result.strip()[:_MAX_OUTPUT]}")


def _catalog(messages: tuple[Message, ...]) -> list[_CatalogSkill]:
    skills: list[_CatalogSkill] = []
    for message in messages:
        if message.role != "system" or "<available_skills>" not in message.content:
            continue
        block = message.content.split("<available_skills>", 1)[1].split("</available_skills>")[0]
        for name, description, skill_id, root in _EXPLICIT.findall(block):
            skills.append(
                _CatalogSkill(
                    name=html.unescape(name),
                    description=html.unescape(description),
                    skill_id=html.unescape(skill_id),
                    files_root=html.unescape(root) or None,
                )
            )
        for attributes, entries in _GROUP.findall(block):
            group = _attributes(attributes)
            for fields, description in _SKILL_ENTRY.findall(entries):
                entry = _attributes(fields)
                name = entry.get("name", "")
                root = group.get("root")
                skills.append(
                    _CatalogSkill(
                        name=name,
                        description=html.unescape(description.strip()),
                        skill_id=f"{name}_{group.get('source', '')}",
                        files_root=f"{root}/{entry.get('folder', name)}" if root else None,
                    )
                )
    return skills


def _attributes(text: str) -> dict[str, str]:
    return {key: html.unescape(value) for key, value in _ATTRIBUTE.findall(text)}


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _best_match(request: str, catalog: list[_CatalogSkill]) -> _CatalogSkill | None:
    wanted = _words(request)
    best: tuple[int, str] = (0, "")
    chosen: _CatalogSkill | None = None
    for skill in catalog:
        # Name words count double: "review" in "code-reviewer" says more than in a description.
        score = 2 * len(wanted & _words(skill.name.replace("-", " "))) + len(wanted & _words(skill.description))
        if score > best[0] or (score == best[0] and score and skill.name < best[1]):
            best, chosen = (score, skill.name), skill
    return chosen


def _no_match(catalog: list[_CatalogSkill]) -> str:
    if not catalog:
        return "I have no skills available, so I can only answer in general terms."
    names = ", ".join(sorted(s.name for s in catalog))
    return f"None of my skills fits that request. Skills I can use: {names}."


def _skill_body(skill_id: str, result: str, messages: tuple[Message, ...]) -> str:
    """The SKILL.md text for ``skill_id``: this load's result, or an earlier full load's when
    the harness answered the repeat load with a short "already loaded" note."""
    if _COMMAND.search(result) or len(result) > 200:
        return result
    loads = {
        call.id
        for m in messages
        for call in m.tool_calls
        if call.name == LOAD_TOOL and call.arguments.get("skillId") == skill_id
    }
    earlier = [m.content for m in messages if m.role == "tool" and m.tool_call_id in loads]
    return max(earlier, key=len, default=result)


def _script_command(body: str, root: str, request: str) -> str | None:
    """The first script command in the body, rooted at ``root``; placeholders such as
    ``<text>`` in its arguments are filled with the (quoted) request.

    Code blocks are searched before inline code, and inline code before prose, because a
    command written as code is meant to be run as written.
    """
    text = _strip_frontmatter(body)
    fenced = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    for line in [*fenced, *_INLINE_CODE.findall(text), *text.splitlines()]:
        match = _COMMAND.search(line)
        if match is None:
            continue
        interpreter, path, arguments = match.groups()
        filler = shlex.quote(request.strip() or "input")
        arguments = _PLACEHOLDER.sub(lambda _, filler=filler: filler, arguments.strip())
        command = f"{root.rstrip('/')}/{path}"
        if interpreter:
            command = f"{interpreter} {command}"
        return f"{command} {arguments}".strip()
    return None


def _strip_frontmatter(body: str) -> str:
    if body.startswith("---"):
        parts = body.split("\n---", 1)
        if len(parts) == 2:
            return parts[1].split("\n", 1)[-1]
    return body


def _summary(body: str) -> str:
    for paragraph in re.split(r"\n\s*\n", _strip_frontmatter(body)):
        text = " ".join(line.strip() for line in paragraph.splitlines()).strip()
        if text and not text.startswith("#"):
            return text[:400]
    return "loaded, but it has no instructions."


def _skill_name_of(calls: list[ToolCall], catalog: list[_CatalogSkill]) -> str:
    for call in calls:
        if call.name == LOAD_TOOL:
            skill_id = str(call.arguments.get("skillId", ""))
            for skill in catalog:
                if skill_id in (skill.skill_id, skill.name):
                    return skill.name
            return skill_id
    return "requested"
