"""The sessions board: one daemon per user (`panewatch serve`) that sees every pane.

    rpc.py        JSON-lines RPC over the daemon's unix socket (both directions)
    model.py      cards, prompts and guard errors as JSON; sorting and formatting
    endpoint.py   PaneEndpoint: a LivePane's card, guarded input, output for viewers
    panes.py      Hub (all cards, listeners), LocalPane (headless), RemotePane (a `run` elsewhere)
    daemon.py     Daemon: lock, unix socket, headless panes, operations
    watchdog.py   Watchdog: a process beside the daemon that ends its headless panes if it dies
    security.py   one-time sign-in tokens, cookie, Host/Origin checks, headers, log redaction
    web.py        aiohttp app: page, static files, websocket route, behind the checks
    limits.py     what the web side may cost: connection caps (total, per address, tabs), idle/slow-header timeout
    logs.py       the daemon's log: rate-limited, redacted, rotated; stderr goes into it
    wsession.py   one browser tab's websocket
    client.py     finding / starting the daemon, one-shot calls (`ensure_daemon()`)
    link.py       BoardLink: how a `panewatch run` pane registers (and re-registers)
    waits.py      BoardWaits: every card's state changes → the waits database (`stats`, the header)
    attach.py     `panewatch attach`: the terminal becomes the pane until the detach key
    static/       the page (board.js, board.css, index.html) and vendor/ (xterm.js, pinned from npm)

For other programs (the demo): `client.ensure_daemon()` starts the daemon if needed and returns
{"url", ...} (no secret in it: `await client.call("login")` gives a one-time sign-in link);
`await client.call("new", argv=[...], name=..., cwd=..., agent=...)` makes a headless pane.
"""
