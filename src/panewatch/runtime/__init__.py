"""I/O on the real clock: PTYs, processes, manifests on disk, the live pane, the guard, hooks,
ACP, notifications, the user's terminal. Imports core and golden."""
