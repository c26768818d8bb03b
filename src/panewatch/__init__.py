"""panewatch: is this agent waiting on me? Blocked/working/idle detection for AI coding agents in terminal panes."""

__version__ = "0.1.0"
