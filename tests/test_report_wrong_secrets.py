"""`report-wrong` keeps no secret a pane showed (issue 23, item 7): the shapes the probe used, and the
layouts that split a secret — the terminal's soft wrap, an agent wrapping its own line (CR LF at the
edge), a cursor move or a hidden cursor inside it, a box's sides, rows placed one by one, a secret drawn
out of order, a title — on a real PTY and from a real tmux pane's seed. Every file of the saved folder
is searched for every 6-character piece of every secret's hidden part."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from panewatch.board.endpoint import PaneEndpoint
from panewatch.runtime.live import LivePane, ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import Tmux, until
from tmuxutil import tmux as tmux

COLS, ROWS = 60, 40
PIECE = 6  # a piece of a secret this long found in a saved file is a leak

# (visible prefix kept by design, hidden value): the value must never reach the folder.
SECRETS = {
    "glpat": "glpat-Xq3vR8tLm2Wk9PzYb7Nc",
    "url_password": "Pg5ecr3tPassw0rdX",
    "mysql": "My5qlS3cretPw",
    "password_flag": "FlagPassw0rdZ9",
    "basic_short": "dTpwYXNzd2Q=",
    "anthropic_soft_wrap": "sk-ant-api03-" + "Hq8Lz2Vx7Nw4Kp9Rt6Ym3Bc5" * 2,
    "github_agent_wrap": "ghp_R7tYu2Io9Pq4Ws6Ed3Fg8Hj1Kl5Zx0Cv",
    "aws_cursor_move": "AKIAZ7Q3R8T2W9X4Y6V1",
    "slack_hidden_cursor": "xoxb-2817364950-Hk7Jq2Lm9Np4Rs",
    "aws_secret_box": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY3",
    "stripe": "sk_live_51Hc8Yt2eZvKYlo2C9q8Wn4Rd",
    "npm": "npm_Bq7Zr2Wx9Lk4Vm8Tn3Pc6Hy1Js5Df0Ga2Qe",
    "huggingface": "hf_Kd8Lq2Zx7Vn4Rw9Tm3Pb6Hc1Jy5Fs0Ge",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcm9iZTIzIn0.Qw8eR4tY2uI6oP0aS3dF7gH1jK5lZ9xC",
    "sshpass": "SshPa55Word7q",
    "docker_login": "D0ckerHubPw8z",
    "curl_user": "CurlUs3rPw4x",
    "token_rows": "Rw9Tk3Lm7Qp2Zx5Vn8Bc4Hy6Js1Df0Gq",
    "token_flag": "TokFlag7Qz3Wx9Lp",
    "url_token_user": "ghs_Ux4Wq8Rz2Tn6Lm9Pk3Vb7Hc5Jy1Fd0Ga",
    "db_pass": "DbPa5sValue88",
    "openai_out_of_order": "sk-proj-Tz6Yq1Wn8Rk3Lp5Vm2Xc7Hb4J",
    "title": "AIzaSyB7Kq2Zx9Lm4Vn8Rt3Wp6Hc1Jy5Fd0Gs",
    "mysql_pwd_env": "Env5QlPwd42x",
}
KEEP = {"anthropic_soft_wrap": 13, "github_agent_wrap": 4, "aws_cursor_move": 4, "slack_hidden_cursor": 5,
        "stripe": 8, "npm": 4, "huggingface": 3, "jwt": 3, "url_token_user": 4, "openai_out_of_order": 3,
        "title": 4, "glpat": 6}


def hidden(name: str) -> str:
    return SECRETS[name][KEEP.get(name, 0):]


def program() -> str:
    """What the pane runs: every secret, in the layouts that split one, then a prompt and a long sleep."""
    s = SECRETS
    esc = "\x1b"
    lines = [
        f"git clone https://oauth2:{s['glpat']}@gitlab.com/team/repo.git",
        f"psql postgres://app:{s['url_password']}@db.internal:5432/app",
        f"mysql -uroot -p{s['mysql']} -h db app",
        f"deploy --user admin --password {s['password_flag']} --yes",
        f"curl -H 'Authorization: Basic {s['basic_short']}' https://api.example",
        f"export STRIPE_KEY={s['stripe']}",
        f"npm config set //registry.npmjs.org/:_authToken {s['npm']}",
        f"huggingface-cli login --token {s['huggingface']}",
        f"jwt {s['jwt']}",
        f"sshpass -p {s['sshpass']} ssh deploy@host",
        f"docker login -u me -p {s['docker_login']} registry.example",
        f"curl -u admin:{s['curl_user']} https://api.example/v1",
        f"gh api --token={s['token_flag']} /user",
        f"git push https://{s['url_token_user']}@github.com/o/r.git",
        f"DB_PASS={s['db_pass']} ./migrate",
        f"MYSQL_PWD={s['mysql_pwd_env']} mysqldump app",
    ]
    out = [f"{esc}]0;GEMINI_API_KEY={s['title']}\a", "\r\n".join(lines), "\r\n", f"{esc}[2J{esc}[H"]
    # The terminal wraps it (the key straddles the right edge).
    out.append("ANTHROPIC_API_KEY=" + s["anthropic_soft_wrap"] + "\r\n")
    # The agent wraps its own line at the edge: CR LF inside the token.
    line = "token: " + s["github_agent_wrap"]
    out.append(line[:23].rjust(COLS) + "\r\n" + line[23:] + "\r\n")
    # A cursor move inside (to the very next cell), then a hidden cursor inside another.
    out.append(f"{esc}[s aws key AKIA{s['aws_cursor_move'][4:10]}{esc}[1C{esc}[1D{s['aws_cursor_move'][10:]}\r\n")
    out.append(f"slack {s['slack_hidden_cursor'][:14]}{esc}[?25l{s['slack_hidden_cursor'][14:]}{esc}[?25h\r\n")
    # A box drawn by the agent: the value split between two rows, inside the box's sides.
    value = "aws_secret_access_key = " + s["aws_secret_box"]
    inner = COLS - 4
    out.append("╭" + "─" * (COLS - 2) + "╮\r\n")
    for i in range(0, len(value), inner):
        out.append("│ " + value[i:i + inner].ljust(inner) + " │\r\n")
    out.append("╰" + "─" * (COLS - 2) + "╯\r\n")
    # Rows placed one by one, as a screen seed does: a full row, then the next row's first cell.
    row = (" " * 20 + "GITHUB_TOKEN=" + s["token_rows"])[:COLS]
    rest = ("GITHUB_TOKEN=" + s["token_rows"])[COLS - 20:]
    out.append(f"{esc}[12;1H{row}{esc}[13;1H{rest}\r\n")
    # Drawn out of order: the second half first, then the cursor goes back for the first half.
    key = s["openai_out_of_order"]
    out.append(f"{esc}[15;1HOPENAI_API_KEY={esc}[15;{16 + 16}H{key[16:]}{esc}[15;16H{key[:16]}\r\n")
    out.append("\r\nready> ")
    script = "import sys, time\nsys.stdout.write(" + repr("".join(out)) + ")\nsys.stdout.flush()\ntime.sleep(600)\n"
    return script


def no_leak(folder: Path) -> None:
    found = leaks(folder)
    assert not found, f"{len(found)} of {len(SECRETS)} secrets reached the folder: {found}"


def leaks(folder: Path) -> dict[str, list[str]]:
    """secret name → the files where a piece of it was found."""
    texts = {p.name: p.read_text(encoding="utf-8", errors="surrogateescape") for p in folder.iterdir()}
    # The cast's JSON escapes (\u001b) and the frames' rows: the text as written, and decoded.
    cast = texts.get("session.cast", "")
    texts["session.cast (decoded)"] = "".join(json.loads(line)[2] for line in cast.splitlines()[1:])
    found: dict[str, list[str]] = {}
    for name in SECRETS:
        value = hidden(name)
        pieces = {value[i:i + PIECE] for i in range(len(value) - PIECE + 1)}
        where = [f for f, text in texts.items() if any(p in text for p in pieces)]
        if where:
            found[name] = where
    return found


async def saved_report(pane: LivePane | TmuxPane) -> Path:
    endpoint = PaneEndpoint(pane, name="probe")
    reply = await endpoint.report_wrong(None)
    endpoint.close()
    return Path(reply["path"])


def test_no_secret_a_pty_pane_showed_reaches_the_folder(tmp_path: Path) -> None:
    script = tmp_path / "show.py"
    script.write_text(program(), encoding="utf-8")

    async def body() -> Path:
        pane = LivePane([sys.executable, str(script)], pane_id="p1", cols=COLS, rows=ROWS, agent="claude")
        pane.start()
        try:
            await until(lambda: "ready>" in pane.snapshot().text(), 15, "the program's output")
            return await saved_report(pane)
        finally:
            await pane.close()

    folder = asyncio.run(asyncio.wait_for(body(), 60))
    screen = (folder / "screen.txt").read_text(encoding="utf-8")
    assert "ready>" in screen and "GITHUB_TOKEN=" in screen and "│ aws_secret_access_key = " in screen
    no_leak(folder)


@pytest.mark.needs("tmux")
def test_no_secret_a_tmux_pane_showed_before_it_was_watched_reaches_the_folder(tmux: Tmux, tmp_path: Path) -> None:
    """The history of a tmux pane starts with its seed (capture-pane: each row placed on its own), where
    a soft-wrapped secret is cut at the row's end."""
    script = tmp_path / "show.py"
    script.write_text(program(), encoding="utf-8")
    tmux("new-session", "-d", "-s", "w", "-x", str(COLS), "-y", str(ROWS),
         f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    deadline = time.monotonic() + 15
    while "ready>" not in tmux("capture-pane", "-p", "-t", "w:0"):
        assert time.monotonic() < deadline, "the program's output never showed in tmux"
        time.sleep(0.05)
    pane_id = tmux("display-message", "-p", "-t", "w:0", "#{pane_id}")

    async def body() -> Path:
        watcher = TmuxWatcher(tmux.server, ManifestWatcher())
        await watcher.start()
        try:
            await until(lambda: pane_id in watcher.panes and watcher.panes[pane_id].seeded, 10, "the seeded pane")
            pane = watcher.panes[pane_id]
            await until(lambda: "ready>" in pane.snapshot().text(), 10, "the seeded screen")
            return await saved_report(pane)
        finally:
            await watcher.close()

    folder = asyncio.run(asyncio.wait_for(body(), 60))
    assert "ready>" in (folder / "screen.txt").read_text(encoding="utf-8")
    no_leak(folder)
