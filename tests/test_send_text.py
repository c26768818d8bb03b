"""`panewatch send ID TEXT...` types TEXT word for word (issue 23, item 9c): argparse took the text's
`--` words for its own and dropped them (`send 3 git checkout -- a.py` typed `git checkout a.py`)."""

from __future__ import annotations

from pathlib import Path

from boardutil import ServeProcess, cli, new_agent, wait_for, wait_state


def typed(log: Path) -> list[str]:
    return [line.removeprefix("typed ") for line in log.read_text().splitlines() if line.startswith("typed ")] \
        if log.exists() else []


def test_send_types_every_word_dashes_and_double_dashes_too(serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    wait_state(pane, "idle")
    sent = [
        (["git", "checkout", "--", "src/a.py"], "git checkout -- src/a.py"),
        (["--", "git", "checkout", "--", "src/a.py"], "git checkout -- src/a.py"),  # a `--` right after ID: ours
        (["echo", "--", "--", "x"], "echo -- -- x"),
        (["--", "--help"], "--help"),
        (["--", "-n", "--no-enter", "--"], "-n --no-enter --"),
        (["run", "-m", "x", "--verbose"], "run -m x --verbose"),
    ]
    for n, (words, text) in enumerate(sent, start=1):
        cli("send", pane, *words, check=True)
        wait_for(lambda n=n: len(typed(log)) == n, f"line {n} typed")
        assert typed(log)[-1] == text
    cli("send", "--no-enter", pane, "half", check=True)  # options go before ID
    cli("send", pane, "-way", check=True)
    wait_for(lambda: len(typed(log)) == len(sent) + 1, "the last line typed")
    assert typed(log)[-1] == "half-way"
    empty = cli("send", pane)
    assert empty.returncode == 2 and "no TEXT to type" in empty.stderr
