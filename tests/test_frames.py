"""Frame goldens: the visible screen of every corpus case at a few times (`frames.json`).

They check the emulator, not the rules: after a pyghostty upgrade this fails with "the screen
changed" where the golden cases would only say that a rule broke. Regenerate with
`scripts/regen-frames` once the new screens are looked at and found right.
"""

from __future__ import annotations

from importlib import metadata

import pytest

from panewatch.golden.cases import bundled_root, find_cases, frame_differences

CASES = find_cases([bundled_root()])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_screen_shows_what_it_showed(case) -> None:  # type: ignore[no-untyped-def]
    frames = case.frames()
    assert frames, f"{case.path}: no frames.json (run scripts/regen-frames {case.path})"
    assert len(frames) == len(case.frame_times())
    differences = frame_differences(case)
    assert not differences, (
        f"the screen changed (pyghostty {metadata.version('pyghostty')}) in {case.name}:\n  "
        + "\n  ".join(differences[:10]) + "\nlook at the new screens, then run scripts/regen-frames")
