"""Private homes for the real agent CLIs, configured to run offline against a mock model server.

Exactly the configuration ../shared/REAL-AGENTS.md lists: onboarding done, manual permission mode,
trust accepted, no updates or telemetry. `prepare()` builds the home and returns what to launch.
OpenCode, Copilot CLI, Qwen Code and Aider: the recipes observed in notes/agents-research.md; Qwen Code's
is verified (pinned in tests/agents, corpus and e2e tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

AGENTS = ("claude", "codex", "gemini", "claude-agent-acp", "opencode", "copilot", "qwen", "aider", "codex-acp")
MOCK_KIND = {"claude": "anthropic", "codex": "openai", "gemini": "gemini", "claude-agent-acp": "anthropic",
             "opencode": "anthropic", "copilot": "anthropic", "qwen": "chat", "aider": "chat", "codex-acp": "openai"}
# ACP agents: argv to speak ACP on stdio (Gemini CLI has its own mode; Codex needs the codex-acp adapter).
ACP_COMMANDS = {"claude-agent-acp": ("claude-agent-acp",), "gemini": ("gemini", "--acp"), "codex-acp": ("codex-acp",)}
API_KEY = "sk-ant-mock-0123456789abcdefghijklmnopqrstuvwxyz"
HELLO_PY = "print('hello')\n"


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start one agent: argv[0] is an absolute path when a bin dir was given."""

    agent: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    home: str
    mock_kind: str
    extra: dict[str, str] = field(default_factory=dict)  # notes, e.g. the config file written


def _base_env(home: Path) -> dict[str, str]:
    # A clean environment: nothing from the caller's real agent setup (keys, config dirs) leaks in.
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "USER": os.environ.get("USER", "panewatch"),
        "SHELL": "/bin/bash",
    }


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")


def claude_home(home: Path, cwd: Path, *, api_key: str = API_KEY) -> None:
    _write_json(home / ".claude.json", {
        "hasCompletedOnboarding": True,  # else: "Failed to connect to api.anthropic.com"
        "hasSeenAutoDefaultNudge": True,  # else: "Make auto mode your default permission mode?" modal
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True, "allowedTools": []}},
        "autoUpdates": False,
    })
    # 2.1.332 defaults to auto mode, which approves tools itself and never shows a prompt.
    _write_json(home / ".claude" / "settings.json", {"permissions": {"defaultMode": "default"}})


def codex_home(home: Path, cwd: Path, mock_url: str) -> Path:
    codex = home / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    config = codex / "config.toml"
    config.write_text(
        'model = "gpt-5.1-codex"\n'
        'model_provider = "mock"\n'
        'approval_policy = "on-request"\n'
        'sandbox_mode = "read-only"\n'
        "check_for_update_on_startup = false\n"
        "\n[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{mock_url.rstrip("/")}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        f"\n[projects.{json.dumps(str(cwd))}]\n"
        'trust_level = "trusted"\n',
        encoding="utf-8",
    )
    return config


def gemini_home(home: Path) -> None:
    _write_json(home / ".gemini" / "settings.json", {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    })


def opencode_env(mock_url: str) -> dict[str, str]:
    """OpenCode reads a whole config from the environment: nothing is written to the home."""
    config = {
        "provider": {"anthropic": {"options": {"baseURL": mock_url.rstrip("/") + "/v1", "apiKey": API_KEY}}},
        "model": "anthropic/claude-sonnet-4-5", "small_model": "anthropic/claude-haiku-4-5",
        "autoupdate": False, "share": "disabled",
        "permission": {"bash": "ask", "edit": "ask"},  # else it runs tools without asking
    }
    return {"OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}


def copilot_home(home: Path, cwd: Path, mock_url: str) -> dict[str, str]:
    """BYOK against the Anthropic mock needs no GitHub login; the folder is pre-trusted (else a modal)."""
    _write_json(home / ".copilot" / "config.json", {"trustedFolders": [str(cwd)], "appTipShown": True,
                                                    "firstLaunchAt": "2026-01-01T00:00:00.000Z"})
    # The binary unpacks ~150 MB of JS on its first start: share one cache instead of one per home.
    cache = os.environ.get("PANEWATCH_COPILOT_CACHE") or str(Path.home() / ".cache" / "panewatch" / "copilot")
    return {"COPILOT_PROVIDER_BASE_URL": mock_url, "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": API_KEY, "COPILOT_MODEL": "claude-sonnet-4.5",
            "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false", "COPILOT_CACHE_HOME": cache}


def qwen_home(home: Path, mock_url: str) -> dict[str, str]:
    _write_json(home / ".qwen" / "settings.json", {
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False},
        # approvalMode: the default is an LLM classifier that approves tools itself; useRipgrep: the vendored
        # rg is not executable after npm install (an error box on screen).
        "tools": {"approvalMode": "default", "useRipgrep": False},
    })
    return {"OPENAI_BASE_URL": mock_url.rstrip("/") + "/v1", "OPENAI_API_KEY": "mock-key",
            "OPENAI_MODEL": "qwen3-coder-plus", "COLORTERM": "truecolor"}


def aider_home(home: Path, cwd: Path, mock_url: str, env: dict[str, str]) -> dict[str, str]:
    """Aider wants a git repo (else a question), a git identity, and a fresh model-price cache (else it
    fetches one from GitHub at start and prints the failure)."""
    (home / ".gitconfig").write_text("[user]\n\tname = mock\n\temail = mock@example.invalid\n", encoding="utf-8")
    _write_json(home / ".aider" / "caches" / "model_prices_and_context_window.json", {"mock": {"max_tokens": 1}})
    if not (cwd / ".git").exists():
        for git in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
            subprocess.run(["git", *git], cwd=cwd, env=env, check=True, capture_output=True)
    return {"OPENAI_API_BASE": mock_url.rstrip("/") + "/v1", "OPENAI_API_KEY": "mock-key",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false",
            "AIDER_ANALYTICS_DISABLE": "true", "AIDER_SHOW_RELEASE_NOTES": "false", "AIDER_GITIGNORE": "false",
            "AIDER_SHOW_MODEL_WARNINGS": "false"}


def prepare(agent: str, root: str | Path, mock_url: str, *, bin_dir: str | Path | None = None,
            cwd: str | Path | None = None, args: Sequence[str] = (), plan_mode: bool = False) -> Launch:
    """Build `root/home` (and the workspace `root/ws` with hello.py unless `cwd` is given).

    `args` are appended to the CLI's argv; `plan_mode` starts Claude Code in plan mode.
    """
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; expected one of {AGENTS}")
    root = Path(root).resolve()
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    work = Path(cwd).resolve() if cwd is not None else root / "ws"
    if cwd is None:
        work.mkdir(parents=True, exist_ok=True)
        if not (work / "hello.py").exists():  # the edit scenarios change this file
            (work / "hello.py").write_text(HELLO_PY, encoding="utf-8")
    env = _base_env(home)
    exe = agent if bin_dir is None else str(Path(bin_dir) / agent)
    argv = [exe]
    extra: dict[str, str] = {}
    if agent in ("claude", "claude-agent-acp"):
        claude_home(home, work)
        env |= {
            "ANTHROPIC_BASE_URL": mock_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        if plan_mode:
            argv += ["--permission-mode", "plan"]
    elif agent in ("codex", "codex-acp"):  # codex-acp (@zed-industries/codex-acp) reads the same CODEX_HOME
        extra["config"] = str(codex_home(home, work, mock_url))
        env |= {"CODEX_HOME": str(home / ".codex"), "MOCK_API_KEY": "mock-key"}
        if agent == "codex":
            argv.append("--no-daemon")  # else a background `codex app-server` outlives the test
    elif agent == "gemini":
        gemini_home(home)
        env |= {"GEMINI_API_KEY": "mock-gemini-key", "GOOGLE_GEMINI_BASE_URL": mock_url,
                "COLORTERM": "truecolor"}
    elif agent == "opencode":
        env |= opencode_env(mock_url)
    elif agent == "copilot":
        env |= copilot_home(home, work, mock_url)
    elif agent == "qwen":
        env |= qwen_home(home, mock_url)
    else:
        env |= aider_home(home, work, mock_url, env)
        argv += ["--model", "openai/gpt-4o"]
    argv += list(args)
    return Launch(agent=agent, argv=argv, env=env, cwd=str(work), home=str(home),
                  mock_kind=MOCK_KIND[agent], extra=extra)


def _repo_agents_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "tests" / "agents"


def lock_hash(agents_dir: Path | None = None) -> str | None:
    """The cache key scripts/install-agents uses (sha256 of package.json + lock, 16 hex digits)."""
    src = agents_dir or _repo_agents_dir()
    try:
        data = (src / "package.json").read_bytes() + (src / "package-lock.json").read_bytes()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()[:16]


def find_agents_bin() -> Path | None:
    """The pinned CLIs' bin dir: $PANEWATCH_AGENTS_BIN, else the install-agents cache for this lock."""
    env = os.environ.get("PANEWATCH_AGENTS_BIN")
    if env:
        return Path(env) if Path(env).is_dir() else None
    cache = Path(os.environ.get("PANEWATCH_AGENTS_CACHE")
                 or Path.home() / ".cache" / "panewatch" / "agents")
    key = lock_hash()
    if key is None or not (cache / key / ".complete").exists():
        return None
    return cache / key / "node_modules" / ".bin"
