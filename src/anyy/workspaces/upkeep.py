"""The capture store's checks and pruning (W4), for ``anyy doctor``.

- ``git fsck`` over the store: a damaged object is a problem no repair can fix (restore a backup).
- Every capture the session store joins to an entry must be in the capture store; one whose ref was lost
  but whose objects are there gets its ref back (``--repair``); one whose objects are gone is reported.
- Captures no entry holds any more (their sessions deleted and reclaimed, a rewind's preview) are
  released: ``--repair`` forgets them and drops the objects nothing else reaches. Forks share captures:
  a capture stays while any session's entry holds it.
"""

from __future__ import annotations

from pathlib import Path

from anyy.storage.checks import Finding
from anyy.storage.protocol import SessionStore
from anyy.workspaces.captures import CAPTURES_DIR, CaptureError, CaptureStore

CHECK = "file_captures"


def check_captures(profile_dir: Path, store: SessionStore, *, repair: bool) -> Finding:
    finding = Finding(check=CHECK)
    root = profile_dir / CAPTURES_DIR
    if not (root / "HEAD").exists():
        if store.file_capture_commits():
            finding.skipped = "no capture store here (restored from a backup, which leaves captures out)"
        return finding
    try:
        captures = CaptureStore(root)
    except CaptureError as exc:
        finding.skipped = str(exc)
        return finding
    for line in captures.check():
        finding.add(1, f"capture store: {line}")
    live = store.file_capture_commits()
    present = captures.captured()
    for commit in sorted(live - present):
        if captures.exists(commit):
            finding.add(1, f"capture {commit[:12]} had lost its ref")
            if repair:
                captures.keep(commit)
                finding.repaired += 1
        else:
            finding.add(1, f"capture {commit[:12]} is gone from the capture store: it cannot be restored")
    unreached = captures.unreached(live, grace=0.0)
    if unreached and repair:
        pruned = captures.prune(live, grace=0.0, expire="now")
        finding.details.append(f"released {pruned} capture(s) no session reaches")
    elif unreached:
        finding.details.append(f"{len(unreached)} capture(s) no session reaches: `anyy doctor --repair` releases them")
    return finding
