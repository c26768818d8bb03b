"""`panewatch top`: the terminal view of every pane the daemon knows (a client of the daemon, as cli/ is).

    rows.py   what is shown, as data: order, filter, each row's cells at a width, the next blocked pane
    feed.py   the daemon: the card subscription, requests, the selected pane's screen stream
    app.py    the Textual app: the list, the selected pane's detail and screen, keys, the popup
    dialogs.py  the answer's confirmation, "this state is wrong", help
"""
