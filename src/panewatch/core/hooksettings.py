"""The agents' own settings documents with and without panewatch's installed hooks: pure text/data in,
text/data out (runtime/hooksinstall.py reads, writes and keeps the backups).

    JSON (Claude Code, Gemini CLI)   `hooks.EVENT` lists of groups; ours appended as groups of their own
    JSON (Copilot CLI)               `hooks.EVENT` lists of hooks (`bash` commands), in a file of its own
                                     in the hooks folder, with the format's `"version": 1`
    TOML (Codex)                     a block between BEGIN and END appended to the user's bytes, holding
                                     `[[hooks.EVENT]]` tables and their `[hooks.state."FILE:event:GROUP:0"]`
                                     trust; Codex's own later writes may land inside the block (it appends
                                     new tables at the end: `[tui]` after a first start, measured with
                                     0.171.0), so taking ours out keeps every other table found there

Ours are the hooks whose command matches OURS (`… panewatch … pane hook report|notify`): the user's own
hooks are never touched. Problems raise AgentSettingsError naming the file (`path`) and what is wrong.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from panewatch.errors import AgentSettingsError

OURS = re.compile(r"panewatch.* pane hook (?:report|notify)\b")
BEGIN = "# >>> panewatch hooks (`panewatch hooks uninstall` removes this block) >>>"
END = "# <<< panewatch hooks <<<"
CodexHook = tuple[str, str, int, str]  # event, command, timeout, trusted hash


def is_ours(hook: object) -> bool:
    """A hook of panewatch's: its command (Copilot CLI's key for it: `bash`) runs `pane hook`."""
    if not isinstance(hook, dict):
        return False
    command = hook.get("command", hook.get("bash"))
    return isinstance(command, str) and OURS.search(command) is not None


@dataclass(frozen=True, slots=True)
class Number:
    """A JSON number as the user's file writes it. Python's floats would write `1e400` back as
    `Infinity` (not JSON: the agent would refuse its settings) and `0.1000000000000000055511` as `0.1`;
    the edit touches only the hooks, so every number goes back as its own text."""

    text: str


def load_json(path: str, data: bytes) -> dict[str, Any]:
    if not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8"), parse_int=Number, parse_float=Number, parse_constant=Number)
    except UnicodeDecodeError:
        raise AgentSettingsError(path, "not UTF-8 text") from None
    except ValueError as exc:
        raise AgentSettingsError(path, f"not valid JSON ({exc}); fix it or move it aside first") from None
    if not isinstance(doc, dict):
        raise AgentSettingsError(path, f"the top level is a JSON {type(doc).__name__}, not an object")
    hooks = doc.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise AgentSettingsError(path, '"hooks" is not an object')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise AgentSettingsError(path, f'"hooks"."{event}" is not a list')
    return doc


def json_without_ours(doc: dict[str, Any], original: dict[str, Any] | None) -> dict[str, Any]:
    """`doc` without panewatch's hooks; containers left empty by that go too unless `original` had them."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return doc
    had = original.get("hooks") if original is not None else None
    had = had if isinstance(had, dict) else {}
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept, touched = [], False
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if is_ours(group):  # Copilot CLI: hooks listed straight under the event, no groups
                touched = True
            elif isinstance(inner, list) and any(is_ours(h) for h in inner):
                touched = True
                rest = [h for h in inner if not is_ours(h)]
                if rest:
                    kept.append({**group, "hooks": rest})
            else:
                kept.append(group)
        if not isinstance(groups, list) or kept or not touched or event in had:
            out[event] = kept if isinstance(groups, list) else groups
    result = {**doc, "hooks": out}
    if not out and original is not None and "hooks" not in original:
        del result["hooks"]
    if original is not None and isinstance(config := result.get("hooksConfig"), dict) \
            and config.get("notifications") is False and "notifications" not in (original.get("hooksConfig") or {}):
        rest_config = {k: v for k, v in config.items() if k != "notifications"}  # the default install added
        if rest_config or "hooksConfig" in original:
            result["hooksConfig"] = rest_config
        else:
            del result["hooksConfig"]
    return result


def json_with_ours(doc: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """`doc` (without ours) plus the settings object `ours`: its hooks; Gemini's `hooksConfig` as a default only."""
    hooks = dict(doc.get("hooks") or {})
    for event, groups in ours["hooks"].items():
        hooks[event] = [*hooks.get(event, []), *groups]
    result = {**doc, "hooks": hooks}
    if "version" in ours:  # Copilot CLI's hooks file format
        result = {"version": doc.get("version", ours["version"]), **result}
    if "hooksConfig" in ours:  # Gemini: "Executing Hook(s)" at every report off, unless the user said otherwise
        config = doc.get("hooksConfig")
        if not isinstance(config, dict) or "notifications" not in config:
            result["hooksConfig"] = {**(config if isinstance(config, dict) else {}), **ours["hooksConfig"]}
    return result


def json_has_ours(doc: dict[str, Any]) -> bool:
    for groups in (doc.get("hooks") or {}).values():
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if is_ours(group) or (isinstance(inner, list) and any(is_ours(h) for h in inner)):
                return True
    return False


def dump_json(doc: dict[str, Any]) -> bytes:
    """`doc` as `json.dumps(doc, indent=2, ensure_ascii=False)` writes it, its Numbers as their own text."""
    return (_dump(doc, 0) + "\n").encode("utf-8")


def _dump(value: object, level: int) -> str:
    if isinstance(value, Number):
        return value.text
    if isinstance(value, dict | list) and value:
        inner, outer = "  " * (level + 1), "  " * level
        items = ([f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_dump(v, level + 1)}" for k, v in value.items()]
                 if isinstance(value, dict) else [f"{inner}{_dump(v, level + 1)}" for v in value])
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return f"{opening}\n" + ",\n".join(items) + f"\n{outer}{closing}"
    return json.dumps(value, ensure_ascii=False)


def load_toml(path: str, data: bytes) -> tuple[str, dict[str, Any]]:
    try:
        text = data.decode("utf-8")
        return text, tomllib.loads(text)
    except UnicodeDecodeError:
        raise AgentSettingsError(path, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentSettingsError(path, f"not valid TOML ({exc}); fix it or move it aside first") from None


def toml_without_ours(path: str, text: str) -> str:
    """`text` without our block (and the blank line install put before it); any other table inside the
    block (Codex writes its own there) stays where the block was."""
    start = text.find(BEGIN)
    if start < 0:
        if OURS.search(text):
            raise AgentSettingsError(path, "panewatch's hooks are there outside its marked block: remove them by hand")
        return text
    end = text.find(END, start)
    if end < 0:
        raise AgentSettingsError(path, f"panewatch's block has no end line ({END!r}): fix it by hand")
    doc = load_toml(path, text.encode("utf-8"))[1]
    groups = _our_groups(doc)
    kept = [section for section in re.split(r"(?m)^(?=\[)", text[start + len(BEGIN):end])
            if section.strip() and not _our_section(path, section, groups)]
    tail = end + len(END) + (text[end + len(END):end + len(END) + 1] == "\n")
    before, foreign = text[:start], "".join(kept).strip("\n")
    if foreign:
        stripped = before + foreign + "\n" + text[tail:]
    else:
        stripped = (before[:-1] if before.endswith("\n\n") else "" if before == "\n" else before) + text[tail:]
    if OURS.search(stripped):
        raise AgentSettingsError(path, "panewatch's hooks are there outside its marked block: remove them by hand")
    return stripped


def _our_groups(doc: dict[str, Any]) -> set[str]:
    """`event:GROUP` (snake case, as in trust keys) of every hook group of ours."""
    found = set()
    hooks = doc.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else []):
        for index, group in enumerate(groups if isinstance(groups, list) and event != "state" else []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(is_ours(h) for h in inner):
                found.add(f"{snake(event)}:{index}")
    return found


def _our_section(path: str, section: str, groups: set[str]) -> bool:
    """Whether one table of the block is ours: a hook group running our command, or its trust entry."""
    header = section.split("\n", 1)[0]
    try:
        table = tomllib.loads(header + "\n")
    except tomllib.TOMLDecodeError:
        return False
    hooks = table.get("hooks")
    if not isinstance(hooks, dict) or len(hooks) != 1:
        return False
    (name, value), = hooks.items()
    if isinstance(value, list):  # [[hooks.EVENT]]
        return OURS.search(section) is not None
    if name == "state" and isinstance(value, dict) and len(value) == 1:  # [hooks.state."FILE:event:GROUP:0"]
        key = next(iter(value))
        return key.startswith(path + ":") and key[len(path) + 1:].rpartition(":")[0] in groups
    return False


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(event: str) -> str:
    """Codex's name for a hook event in trust keys: PreToolUse -> pre_tool_use."""
    return _CAMEL.sub("_", event).lower()


def toml_with_ours(path: str, text: str, hooks: list[CodexHook]) -> str:
    """`text` (without ours) plus our block; refuses what Codex would not merge with it."""
    doc = tomllib.loads(text)
    theirs_all = doc.get("hooks", {})
    if not isinstance(theirs_all, dict):
        raise AgentSettingsError(path, "`hooks` is not a table")
    lines = [BEGIN]
    trust = []
    for event, command, timeout, trusted in hooks:
        theirs = theirs_all.get(event, [])
        if not isinstance(theirs, list):
            raise AgentSettingsError(path, f"`hooks.{event}` is not an array of tables")
        hook = "{" + f'type = "command", command = {json.dumps(command)}, timeout = {timeout}' + "}"
        lines += [f"[[hooks.{event}]]", f"hooks = [{hook}]", ""]
        key = f"{path}:{snake(event)}:{len(theirs)}:0"  # Codex's trust key: source, event, group, handler
        trust += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(trusted)}", ""]
    block = "\n".join([*lines, *trust]).rstrip("\n") + "\n" + END + "\n"
    sep = "" if not text else "\n" if text.endswith("\n") else "\n\n"
    new = text + sep + block
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise AgentSettingsError(path, f"panewatch's [[hooks.…]] tables do not merge with this file ({exc}): "
                                       "hooks as inline arrays, or `hooks.state` as an inline table?") from None
    return new
