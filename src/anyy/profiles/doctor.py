"""``anyy doctor`` (D11): check a profile's store and, when asked, repair what can be repaired safely.

The checks are the store's own (:meth:`SessionStore.check`, the same for SQLite and PostgreSQL; see
:mod:`anyy.storage.checks`), and the file captures' (:mod:`anyy.workspaces.upkeep`). This module decides
what is safe around them:

- **Repair refuses while the profile's Gateway runs.** The Gateway is the one writer of its sessions: an
  execution marked running *is* running while it lives, and a repair racing its writes could undo them.
  A Gateway already recovers what a crash left at its start; the doctor is for what that does not cover,
  with the Gateway stopped (``anyy gateway stop``, then ``anyy doctor --repair``).
- **Checking works while it runs**, read-only, but skips ``executions`` (its running work is its own).
- Several Gateways sharing one PostgreSQL database: only this machine's is seen; stop them all first.
"""

from __future__ import annotations

import msgspec

from anyy.domain.errors import Conflict
from anyy.profiles.profile import Profile
from anyy.profiles.store import open_store, store_backend
from anyy.storage.checks import Finding
from anyy.workspaces.upkeep import check_captures


class DoctorReport(msgspec.Struct, kw_only=True):
    profile: str
    backend: str  # "sqlite" or "postgresql"
    repair: bool
    gateway_pid: int | None  # the profile's running Gateway, when one runs
    findings: list[Finding]
    problems: int  # found
    repaired: int
    left: int  # problems found and not repaired


def doctor(profile: Profile, *, repair: bool = False) -> DoctorReport:
    profile.require()
    from anyy.profiles.backup import gateway_running

    pid = gateway_running(profile)
    if repair and pid is not None:
        where = f" (pid {pid})" if pid > 0 else ""
        raise Conflict(
            f"the Gateway of profile {profile.name} is running{where}: it is the one writer of its sessions, so "
            f"repairs wait until it stops. Stop it with `anyy gateway stop --profile {profile.name}`, then run "
            f"`anyy doctor --repair --profile {profile.name}`; `anyy doctor` without --repair checks while it runs"
        )
    skip = ["executions"] if pid is not None else []
    store = open_store(profile)
    try:
        findings = store.check(repair=repair, skip=skip)
        findings.append(check_captures(profile.path, store, repair=repair))  # W4
    finally:
        store.close()
    for finding in findings:
        if finding.check in skip:
            finding.skipped = "the Gateway is running: the work it runs is its own"
    return DoctorReport(
        profile=profile.name,
        backend=store_backend(profile),
        repair=repair,
        gateway_pid=pid,
        findings=findings,
        problems=sum(f.problems for f in findings),
        repaired=sum(f.repaired for f in findings),
        left=sum(f.left for f in findings),
    )
