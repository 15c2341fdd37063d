"""W3 against a model steered by an attacker: a folder swapped for a symlink (hidden by a ``.gitignore``
the agent wrote) never leads a rewind to write or remove outside the workspace; it is reported instead."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from anyy.workspaces.captures import CaptureStore


def test_w3_a_rewind_never_writes_through_a_symlink_swapped_in(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "x").write_text("precious\n")
    store = CaptureStore(tmp_path / "captures.git")
    (work / "d").mkdir()
    (work / "d" / "x").write_text("in the workspace\n")
    (work / "d" / "y").write_text("also\n")
    before = store.capture(work)
    shutil.rmtree(work / "d")
    os.symlink(outside, work / "d")
    (work / ".gitignore").write_text("d\n")
    report = store.restore(work, before.commit, overwrite_hand_edits=True)
    assert (outside / "x").read_text() == "precious\n"
    assert sorted(os.listdir(outside)) == ["x"]
    assert sorted(report.not_restorable) == [
        "d/x (a symlink or file is in the way of its folder)",
        "d/y (a symlink or file is in the way of its folder)",
    ]
