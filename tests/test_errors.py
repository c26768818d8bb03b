"""One error tree: every exception panewatch defines derives from PanewatchError (errors.py), and
the errors that cross the wire carry distinct wire names as class attributes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import panewatch
from panewatch.errors import PanewatchError

# Control flow, not errors: a signal unwinding `run` through its `finally` blocks.
# control flow, not errors: a signal unwinding `run`, a settings file changed under an edit (done again)
NOT_ERRORS = {"panewatch.cli.run._Signalled", "panewatch.runtime.hooksinstall._Changed"}


def exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(panewatch.__path__, "panewatch."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                found.append(value)
    return found


def test_every_exception_derives_from_the_documented_base() -> None:
    found = exceptions()
    assert len(found) >= 15
    strays = [f"{c.__module__}.{c.__qualname__}" for c in found
              if not issubclass(c, PanewatchError) and f"{c.__module__}.{c.__qualname__}" not in NOT_ERRORS]
    assert not strays, f"not under PanewatchError: {strays}"
    doc = panewatch.errors.__doc__ or ""
    undocumented = [c.__name__ for c in found if issubclass(c, PanewatchError) and c.__name__ not in doc]
    assert not undocumented, f"missing from the tree in errors.py: {undocumented}"


def test_wire_names_are_class_attributes_and_distinct() -> None:
    named = {c: c.__dict__["wire_name"] for c in exceptions() if "wire_name" in c.__dict__}
    assert len(set(named.values())) == len(named), named
    assert {"pane_blocked", "not_blocked", "prompt_changed", "unknown_option", "agent_exited"} <= set(named.values())
