from __future__ import annotations

from pathlib import Path

import pytest

from panewatch.core.manifest import ManifestError, load_all, load_manifest, load_manifest_text

GOOD = """
[agent]
id = "toy"
name = "Toy"
processes = ["toy"]
versions = ["1.0"]
[[rules]]
id = "ask"
state = "blocked"
region = "bottom:2"
any = ['^Proceed\\?']
note = "the toy asks"
[[rules]]
id = "busy"
state = "working"
any = ['busy']
note = "the toy works"
"""


def test_bundled_manifests_load_cleanly() -> None:
    manifests = load_all()
    assert manifests.errors == []
    assert {"claude", "codex", "gemini", "aider", "opencode", "cursor", "qwen", "copilot"} <= set(manifests.manifests)
    for agent_id in ("claude", "codex", "gemini", "qwen", "opencode", "aider", "copilot"):
        manifest = manifests.manifests[agent_id]
        assert manifest.verified and manifest.versions
        assert all(rule.note for rule in manifest.rules)
    assert not manifests.manifests["cursor"].verified


def test_an_identified_only_rule_never_speaks_for_an_unknown_screen() -> None:
    """Aider's catch-all (the cursor off its prompt: working) fits any screen: it applies only once the
    pane is known to be Aider."""
    from panewatch.core.classify import classify, classify_unidentified
    from panewatch.core.screen import Snapshot

    manifests = load_all()
    aider = manifests.manifests["aider"]
    assert [r.id for r in aider.rules if r.identified] == ["not-at-the-prompt"]
    shell = Snapshot(rows=("$ make", "building…", ""), cursor=(0, 2), width=80)
    assert classify(shell, aider).rule == "not-at-the-prompt"
    assert classify_unidentified(shell, manifests.list()).state == "idle"
    with pytest.raises(ManifestError, match="`identified` must be true or false"):
        load_manifest_text('[agent]\nid = "x"\n[[rules]]\nid = "r"\nstate = "idle"\nany = ["a"]\n'
                           'identified = "yes"\nnote = "n"\n', "x.toml")


def test_every_problem_is_reported_with_file_and_rule() -> None:
    text = """
[agent]
id = "Bad Id"
[[rules]]
id = "one"
state = "working"
any = ['(unclosed']
[[rules]]
id = "one"
state = "blocked"
region = "bottom"
colour = "red"
note = "x"
any = ['ok']
[[rules]]
id = "three"
state = "sleeping"
region = "left:3"
note = "y"
"""
    with pytest.raises(ManifestError) as info:
        load_manifest_text(text, "bad.toml")
    problems = info.value.problems
    assert info.value.path == "bad.toml"
    expected = [
        "`id` must be a lowercase word",
        "rule #1 'one': `any` pattern '(unclosed' does not compile",
        "rule #1 'one': missing `note`",
        "rule #2 'one': duplicate id",
        "rule #2 'one': blocked rule after a working rule",
        "rule #2 'one': region 'bottom' needs a row count",
        "rule #2 'one': unknown key `colour`",
        "rule #3 'three': `state` must be one of",
        "rule #3 'three': unknown region 'left:3'",
        "rule #3 'three': needs `any` or `all` patterns",
    ]
    for fragment in expected:
        assert any(fragment in p for p in problems), (fragment, problems)
    assert "bad.toml" in str(info.value)


def test_invalid_toml_names_the_file() -> None:
    with pytest.raises(ManifestError, match=r"broken\.toml: not valid TOML"):
        load_manifest_text("[agent\nid=", "broken.toml")


def test_one_bad_file_never_stops_the_others(tmp_path: Path) -> None:
    (tmp_path / "toy.toml").write_text(GOOD)
    (tmp_path / "broken.toml").write_text("[[rules]]\nid = 3\n")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    manifests = load_all(tmp_path)
    assert "toy" in manifests.manifests and "claude" in manifests.manifests
    assert sorted(Path(e.path).name for e in manifests.errors) == ["binary.toml", "broken.toml"]


def test_user_manifest_replaces_bundled_one(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(GOOD.replace('id = "toy"', 'id = "claude"'))
    manifests = load_all(tmp_path)
    claude = manifests.manifests["claude"]
    assert claude.origin == "user" and [r.id for r in claude.rules] == ["ask", "busy"]


def test_load_manifest_reports_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "missing.toml")


def test_wraps_and_moving_are_checked_with_the_rule_they_are_in() -> None:
    rules = """
[agent]
id = "toy"
[[rules]]
id = "busy"
state = "working"
region = "bottom:2"
wraps = {wraps}
moving = {moving}
any = ['x']
note = "n"
[[rules]]
id = "titled"
state = "working"
region = "title"
{titled}
any = ['z']
note = "n"
[[rules]]
id = "late"
state = "idle"
{late}
any = ['y']
note = "n"
"""
    with pytest.raises(ManifestError) as err:
        load_manifest_text(rules.format(wraps='"yes"', moving=0, titled="moving = 2", late="moving = 1.5"), "toy.toml")
    assert err.value.problems == [
        "rule #1 'busy': `wraps` must be true or false",
        "rule #1 'busy': `moving` must be a number of seconds in (0, 60]",
        "rule #2 'titled': `moving` needs a screen region (a title has no line to watch)",
        "rule #3 'late': `moving` is for working rules (a busy indicator), not idle",
    ]
    ok = load_manifest_text(rules.format(wraps="true", moving=2.5, titled="", late=""), "toy.toml")
    assert (ok.rules[0].wraps, ok.rules[0].moving, ok.rules[1].moving) == (True, 2.5, None)
