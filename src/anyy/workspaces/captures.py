"""File captures (W2): a workspace's state kept in a git object store of the profile's own.

The store is a bare repository at ``<profile>/captures.git`` driven by ``git`` plumbing, never the
user's repository: every command runs with ``GIT_DIR`` pointing at ours, ``GIT_WORK_TREE`` at the
workspace and ``GIT_INDEX_FILE`` at a private index per workspace (``indexes/<key>``). Git skips a
work tree's ``.git`` folder by itself, so the user's index, HEAD, refs and objects are never read or
written. What this buys:

- **O(changed files)**: the private index keeps each file's stat data, so one ``git ls-files -m -o`` (a
  walk of the folder, an ``lstat`` per file, nothing read) lists what changed, and only those paths are
  hashed into the index (``update-index --stdin``).
- **Dedup**: blobs and trees are content-addressed; a capture whose tree equals the workspace's last
  one reuses that commit.
- ``.gitignore`` of the workspace is honoured (ignored files are neither captured nor restored).
- Modes git knows are kept: regular, executable, symlink (its target is the blob).

A file above ``file_cap`` bytes, or past ``capture_cap`` new bytes in one capture, is **not copied**: it
is listed in the capture's manifest (the commit message, JSON) by size, mtime and SHA-256, and a rewind
says so instead of restoring it.

Durability (W4): git writes objects before the refs that name them, with ``core.fsync`` on objects and
refs; the caller records a capture in the session store only after :meth:`capture` returned, so a kill at
any point leaves at worst unreferenced objects, which :meth:`prune` removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from anyy.domain.errors import AnyyError

CAPTURES_DIR = "captures.git"  # in the profile's folder
FILE_CAP = 16 * 1024 * 1024  # bytes: a file above it is recorded, not copied
CAPTURE_CAP = 256 * 1024 * 1024  # bytes of new content one capture copies at most
MAX_CHANGED_FILES = 100_000  # a folder with more new files at once (a home folder?) is not captured
# Loose objects are packed (as deltas of each other) after this many captures, or once the files these
# captures copied add up to this many bytes: a big file edited a little at each turn costs its edits, not
# a whole copy per turn.
REPACK_AFTER = 64
REPACK_AFTER_BYTES = 4 * 1024 * 1024
_REF_CAPTURE = "refs/anyy/captures/"
_REF_LAST = "refs/anyy/workspaces/"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_CONFIG = (
    "core.fsync=objects,reference",  # a capture's objects and refs are on disk before it is offered
    "core.fsyncMethod=batch",  # one flush for all of a capture's objects
    "core.autocrlf=false",  # bytes in, bytes out
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.filemode=true",
    "core.untrackedCache=true",  # the folder walk of ``add -A`` skips unchanged folders
    "core.bigFileThreshold=64m",
    "gc.auto=0",  # we repack ourselves, never in the middle of a capture
    "advice.addEmbeddedRepo=false",
    "advice.addIgnoredFile=false",
)


class CaptureError(AnyyError):
    """The capture store could not do what was asked (git missing, a broken store)."""


@dataclass(frozen=True)
class LargeFile:
    """A file recorded by identity only (not copied): too big for the caps."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    executable: bool


@dataclass(frozen=True)
class Capture:
    commit: str
    tree: str
    large: tuple[LargeFile, ...] = ()
    reused: bool = False  # the workspace had not changed since its last capture: that commit again


@dataclass(frozen=True)
class Change:
    status: str  # "added", "changed", "removed"
    path: str
    old_mode: str = ""
    new_mode: str = ""
    old_blob: str = ""
    new_blob: str = ""


@dataclass
class RestoreReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by hand since the last capture: left alone
    not_restorable: list[str] = field(default_factory=list)  # large files not copied, or blocked paths
    commit: str = ""  # the capture of the workspace after the restore


def git_path() -> str:
    found = shutil.which("git")
    if found is None:
        raise CaptureError(
            "file captures need the `git` program, which is not on PATH: install git (e.g. `apt-get install git`) "
            "or turn captures off with `[workspaces] captures = false` in the profile's config.toml"
        )
    return found


def workspace_key(workspace: Path) -> str:
    return hashlib.sha256(os.fsencode(str(workspace.resolve()))).hexdigest()[:24]


class CaptureStore:
    """One profile's capture store. Methods block (they run git): call them off the event loop."""

    def __init__(self, root: Path, *, file_cap: int = FILE_CAP, capture_cap: int = CAPTURE_CAP) -> None:
        self.root = root
        self.file_cap = file_cap
        self.capture_cap = capture_cap
        self._git = git_path()
        self._env = _clean_env()
        # One capture or restore of a workspace at a time (sessions sharing a folder share its index).
        self._locks: dict[str, threading.RLock] = {}
        self._locks_lock = threading.Lock()

    def _lock(self, workspace: Path) -> threading.RLock:
        key = workspace_key(workspace)
        with self._locks_lock:
            return self._locks.setdefault(key, threading.RLock())

    # -- plumbing --------------------------------------------------------------------------------
    def _run(
        self,
        args: Sequence[str],
        *,
        workspace: Path | None = None,
        index: Path | None = None,
        stdin: bytes | None = None,
        check: bool = True,
    ) -> bytes:
        env = dict(self._env)
        env["GIT_DIR"] = str(self.root)
        if workspace is not None:
            env["GIT_WORK_TREE"] = str(workspace)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        argv = [self._git]
        for item in _CONFIG:
            argv += ["-c", item]
        argv += list(args)
        done = subprocess.run(  # noqa: S603 - git, found on PATH, with our own arguments
            argv,
            input=stdin,
            capture_output=True,
            env=env,
            cwd=str(workspace or self.root.parent),
            check=False,
        )
        if check and done.returncode != 0:
            detail = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
            raise CaptureError(f"the capture store at {self.root} failed: git {args[0]}: {detail}")
        return done.stdout

    def ensure(self) -> None:
        if (self.root / "HEAD").exists():
            return
        self.root.parent.mkdir(parents=True, exist_ok=True)
        self._run(["init", "--bare", "--quiet"])
        (self.root / "indexes").mkdir(exist_ok=True)

    def _index(self, workspace: Path) -> Path:
        return self.root / "indexes" / workspace_key(workspace)

    def last(self, workspace: Path) -> str | None:
        """The workspace's last capture taken as a baseline (the agent's, or a rewind's)."""
        return self._read_ref(_REF_LAST + workspace_key(workspace))

    def _read_ref(self, name: str) -> str | None:
        try:
            return (self.root / name).read_text().strip() or None
        except FileNotFoundError:
            out = self._run(["rev-parse", "-q", "--verify", name], check=False)  # a packed ref
            return out.decode().strip() or None

    def _write_ref(self, name: str, commit: str) -> None:
        """A loose ref, written and synced after the objects it names (git's own files-backend format)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _durable_write(path, (commit + "\n").encode())

    def exists(self, commit: str) -> bool:
        out = self._run(["cat-file", "-t", commit], check=False)
        return out.strip() == b"commit"

    # -- capture ---------------------------------------------------------------------------------
    def capture(self, workspace: Path, *, baseline: bool = True) -> Capture:
        """Capture ``workspace`` as it is now. ``baseline``: it becomes the workspace's last capture, from
        which hand edits are told (a rewind's preview captures without moving it)."""
        with self._lock(workspace):
            return self._capture(workspace, baseline=baseline)

    def _capture(self, workspace: Path, *, baseline: bool) -> Capture:
        self.ensure()
        if not workspace.is_dir():
            raise CaptureError(f"the workspace {workspace} is not a folder: nothing to capture")
        index = self._index(workspace)
        known = self._known(index)  # what the private index held after the last capture through it
        old_large = {item.path: item for item in _large_of(known.manifest)} if known else {}
        candidates = _split0(
            self._run(
                [*self._excludes(workspace, index), "ls-files", "-z", "-m", "-o", "--exclude-standard"],
                workspace=workspace,
                index=index,
            )
        )
        if len(candidates) > MAX_CHANGED_FILES:
            raise CaptureError(
                f"the workspace {workspace} has {len(candidates)} new or changed files since its last capture "
                f"(at most {MAX_CHANGED_FILES} are captured at once): list what need not be kept in its "
                ".gitignore, or work in a smaller folder"
            )
        if known and not candidates and all(_same_file(workspace / p, i) for p, i in old_large.items()):
            # Nothing changed since that capture: no hashing, no new objects (one git call).
            if baseline and self.last(workspace) != known.commit:
                self._write_ref(_REF_LAST + workspace_key(workspace), known.commit)
            return Capture(commit=known.commit, tree=known.tree, large=tuple(old_large.values()), reused=True)
        large: list[LargeFile] = []
        budget = self.capture_cap
        copied = 0
        real_dirs: dict[str, bool] = {}
        for path in candidates:
            if not _reachable(workspace, path, real_dirs):
                continue  # beyond a symlink swapped in: dropped below
            try:
                info = (workspace / path).lstat()
            except FileNotFoundError:
                continue  # removed: ``add -A`` drops it
            if not _is_regular(info.st_mode):
                continue
            if info.st_size > self.file_cap or info.st_size > budget:
                large.append(_large(workspace, path, info, old_large.get(path)))
            else:
                budget -= info.st_size
                copied += info.st_size
        # Large files stay out of the index (and so out of the object store); those still unchanged since
        # the last capture are carried over from its manifest.
        listed = {item.path for item in large}
        for path, item in old_large.items():
            if path not in listed and _same_file(workspace / path, item):
                large.append(item)
                listed.add(path)
        # Only the paths ``ls-files`` listed go to the index (no second walk of the folder): new and changed
        # ones are hashed and added, removed ones dropped. A nested repository (``sub/``) is added as git
        # does, as a link to its commit.
        gone = {p for p in candidates if p not in listed and not _reachable(workspace, p, real_dirs)}
        todo = [path.rstrip("/") for path in candidates if path not in listed and path not in gone]
        listed |= gone  # beyond a symlink or a file now (git refuses those paths): out of the index
        if todo:
            self._run(
                ["update-index", "-z", "--add", "--remove", "--replace", "--stdin"],
                workspace=workspace,
                index=index,
                stdin=_join0(todo),
            )
        if listed:
            self._run(
                ["update-index", "-z", "--force-remove", "--stdin"],
                workspace=workspace,
                index=index,
                stdin=_join0(sorted(listed)),
            )
        tree = self._run(["write-tree"], workspace=workspace, index=index).decode().strip()
        large.sort(key=lambda item: item.path)
        manifest = _manifest(large)
        if known and known.tree == tree and known.manifest == manifest:
            commit = known.commit
        else:
            commit = self._run(["commit-tree", tree], stdin=manifest.encode()).decode().strip()
            self._write_ref(_REF_CAPTURE + commit, commit)  # after its objects: git synced them
        if baseline:
            self._write_ref(_REF_LAST + workspace_key(workspace), commit)
        self._remember(index, _Known(commit=commit, tree=tree, manifest=manifest))
        if commit != (known.commit if known else None):
            self._maybe_repack(copied)
        return Capture(
            commit=commit, tree=tree, large=tuple(large), reused=known is not None and commit == known.commit
        )

    def _excludes(self, workspace: Path, index: Path) -> list[str]:
        """For a workspace inside a repository (a subfolder of it), the ignore rules of the folders above
        it, as git would apply them there (git reads only the work tree's own ``.gitignore`` files)."""
        patterns = inherited_ignores(workspace)
        if not patterns:
            return []
        path = index.with_suffix(".exclude")
        text = "\n".join(patterns) + "\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return ["-c", f"core.excludesFile={path}"]

    def _known(self, index: Path) -> _Known | None:
        """The last capture through ``index``, if the index is still as that capture left it."""
        try:
            raw = json.loads(index.with_suffix(".json").read_text())
            info = index.stat()
        except (OSError, ValueError):
            return None
        if raw.get("index") != [info.st_ino, info.st_mtime_ns, info.st_size]:
            return None  # the index changed after (a capture killed halfway): go the whole way
        return _Known(commit=raw["commit"], tree=raw["tree"], manifest=raw["manifest"])

    def _remember(self, index: Path, known: _Known) -> None:
        info = index.stat()
        body = {**known.__dict__, "index": [info.st_ino, info.st_mtime_ns, info.st_size]}
        index.with_suffix(".json").write_text(json.dumps(body))

    def set_baseline(self, workspace: Path, commit: str) -> None:
        self._write_ref(_REF_LAST + workspace_key(workspace), commit)

    def _tree_of(self, commit: str) -> str:
        return self._run(["rev-parse", f"{commit}^{{tree}}"]).decode().strip()

    def _message(self, commit: str) -> str:
        raw = self._run(["cat-file", "commit", commit]).decode(errors="replace")
        return raw.split("\n\n", 1)[1] if "\n\n" in raw else ""

    def large_files(self, commit: str | None) -> list[LargeFile]:
        return _large_of(self._message(commit)) if commit else []

    def _maybe_repack(self, copied: int) -> None:
        counter = self.root / "captures-since-repack"
        try:
            count, size = (int(part) for part in counter.read_text().split())
        except (FileNotFoundError, ValueError):
            count, size = 0, 0
        count, size = count + 1, size + copied
        packs = self.root / "objects" / "pack"
        packed = sum(p.stat().st_size for p in packs.glob("*.pack")) if packs.is_dir() else 0
        if size >= max(REPACK_AFTER_BYTES, packed // 4):
            # Copied bytes worth a pack of their own: everything in one pack, where the new versions of a
            # file become deltas of the old (a pack of only the new objects would hold one of them whole).
            # Triggered by the store's growth, its cost is amortised over what was copied.
            self.repack(full=True)
            count, size = 0, 0
        elif count >= REPACK_AFTER:
            self.repack()
            count = 0
        counter.write_text(f"{count} {size}")

    def repack(self, *, full: bool = False) -> None:
        """Loose objects into packs, as deltas of each other (``full``: one pack, deltas across all; the
        deltas of the old packs are reused). Long delta chains: a file edited at every turn is one base and
        a chain of small deltas."""
        args = ["repack", "-d", "-q", "--window=16", "--depth=4095"]
        args += ["-a"] if full else ["--geometric=2"]
        self._run(args)

    # -- reading ---------------------------------------------------------------------------------
    def changes(self, old: str | None, new: str) -> list[Change]:
        """What differs from ``old`` (None: an empty folder) to ``new``, path by path."""
        out = self._run(["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old or EMPTY_TREE, new])
        fields = out.split(b"\0")
        found: list[Change] = []
        i = 0
        while i + 1 < len(fields) and fields[i]:
            meta = fields[i].decode().lstrip(":").split(" ")
            path = os.fsdecode(fields[i + 1])
            i += 2
            old_mode, new_mode, old_blob, new_blob, status = meta[0], meta[1], meta[2], meta[3], meta[4]
            kind = {"A": "added", "D": "removed"}.get(status[:1], "changed")
            found.append(Change(kind, path, old_mode, new_mode, old_blob, new_blob))
        return found

    def diff_text(self, old: str | None, new: str, paths: Iterable[str] = ()) -> str:
        args = ["diff", "--no-color", "--no-renames", "--no-ext-diff", old or EMPTY_TREE, new, "--"]
        return self._run([*args, *paths]).decode(errors="replace")

    # -- restore ---------------------------------------------------------------------------------
    def restore(self, workspace: Path, target: str, *, overwrite_hand_edits: bool = False) -> RestoreReport:
        """Make ``workspace`` as it was at ``target``. Files changed by hand since the workspace's last
        capture are left alone (``kept``) unless ``overwrite_hand_edits``."""
        with self._lock(workspace):
            return self._restore(workspace, target, overwrite_hand_edits=overwrite_hand_edits)

    def _restore(self, workspace: Path, target: str, *, overwrite_hand_edits: bool) -> RestoreReport:
        plan = self.plan(workspace, target)
        report = RestoreReport(kept=[] if overwrite_hand_edits else sorted(plan.hand_edited & plan.paths))
        skip = set(report.kept)
        todo = [change for change in plan.changes if change.path not in skip]
        for change in todo:  # removals first: a folder may become a file
            if change.status == "removed" or change.new_mode in ("160000",):
                _remove(workspace, change.path)
                if change.status == "removed":
                    report.removed.append(change.path)
        writes = [c for c in todo if c.status != "removed" and c.new_mode != "160000"]
        blobs = self._blobs([c.new_blob for c in writes])
        for change in writes:
            if not _write(workspace, change.path, change.new_mode, blobs[change.new_blob]):
                report.not_restorable.append(f"{change.path} (a symlink or file is in the way of its folder)")
                continue
            (report.added if change.status == "added" else report.changed).append(change.path)
        for item in plan.large_then:
            if not _same_content(workspace / item.path, item):
                report.not_restorable.append(f"{item.path} (a large file, {item.size} bytes, was not copied)")
        wanted = {item.path for item in plan.large_then}
        for item in plan.large_now:
            if item.path not in wanted:
                report.not_restorable.append(f"{item.path} (a large file not in that capture: left in place)")
        if not skip and not report.not_restorable:
            # The workspace is the target now: no capture needed (the files written are stat-dirty in the
            # private index and are hashed again by the next capture, which finds the target's tree).
            report.commit = target
            self.set_baseline(workspace, target)
            return report
        after = self.capture(workspace, baseline=False)
        report.commit = after.commit
        baseline = after.commit
        if skip and plan.baseline:  # kept hand edits stay hand edits for the next rewind too
            baseline = self._mixed(workspace, after.commit, plan.baseline, sorted(skip))
        self.set_baseline(workspace, baseline)
        return report

    def plan(self, workspace: Path, target: str) -> RestorePlan:
        """What a restore to ``target`` would do (a preview): nothing in the workspace moves."""
        raw = self._run(["cat-file", "commit", target], check=False).decode(errors="replace")
        if not raw:
            raise CaptureError(f"capture {target[:12]} is not in the capture store at {self.root}")
        baseline = self.last(workspace)
        now = self.capture(workspace, baseline=False)
        hand = {c.path for c in self.changes(baseline, now.commit)} if baseline and baseline != now.commit else set()
        changes = self.changes(now.commit, target) if now.commit != target else []
        return RestorePlan(
            current=now.commit,
            baseline=baseline,
            changes=changes,
            hand_edited=hand,
            large_now=now.large,
            large_then=tuple(_large_of(raw.split("\n\n", 1)[1] if "\n\n" in raw else "")),
        )

    def _mixed(self, workspace: Path, commit: str, baseline: str, paths: list[str]) -> str:
        """``commit`` with ``paths`` as they were in ``baseline``."""
        index = self.root / "indexes" / f"{workspace_key(workspace)}.mix"
        try:
            self._run(["read-tree", commit], index=index)
            old = self._run(["ls-tree", "-r", "-z", baseline, "--", *paths])
            gone = b"".join(b"0 " + b"0" * 40 + b"\t" + os.fsencode(p) + b"\0" for p in paths)
            self._run(["update-index", "-z", "--index-info"], index=index, stdin=gone + old)
            tree = self._run(["write-tree"], index=index).decode().strip()
        finally:
            index.unlink(missing_ok=True)
        message = self._message(baseline).encode()
        mixed = self._run(["commit-tree", tree], stdin=message).decode().strip()
        self._write_ref(_REF_CAPTURE + mixed, mixed)
        return mixed

    def _blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        unique = sorted(set(shas))
        if not unique:
            return {}
        out = self._run(["cat-file", "--batch"], stdin="".join(s + "\n" for s in unique).encode())
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in unique:
            end = out.index(b"\n", pos)
            header = out[pos:end].split(b" ")
            size = int(header[2])
            blobs[sha] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return blobs

    # -- upkeep (W4) -----------------------------------------------------------------------------
    def check(self) -> list[str]:
        """Problems of the store itself: what ``git fsck`` reports about the captures' objects."""
        if not (self.root / "HEAD").exists():
            return []
        done = subprocess.run(  # noqa: S603 - git, found on PATH, with our own arguments
            [self._git, "--git-dir", str(self.root), "fsck", "--no-progress", "--no-dangling", "--connectivity-only"],
            capture_output=True,
            env=self._env,
            check=False,
        )
        lines = (done.stdout + done.stderr).decode(errors="replace").splitlines()
        return [line for line in lines if line.strip() and not line.startswith(("Checking", "notice:"))]

    def captured(self) -> set[str]:
        """Every capture the store keeps (a ref each)."""
        folder = self.root / _REF_CAPTURE
        loose = {p.name for p in folder.iterdir() if len(p.name) == 40} if folder.is_dir() else set()
        if (self.root / "packed-refs").exists():
            out = self._run(["for-each-ref", "--format=%(objectname)", _REF_CAPTURE])
            loose |= set(out.decode().split())
        return loose

    def keep(self, commit: str) -> None:
        """Give a capture whose objects are here its ref back."""
        self._write_ref(_REF_CAPTURE + commit, commit)

    def _baselines(self) -> set[str]:
        folder = self.root / _REF_LAST
        if not folder.is_dir():
            return set()
        return {p.read_text().strip() for p in folder.iterdir() if not p.name.endswith(".tmp")}

    def unreached(self, live: set[str], *, grace: float = 3600.0) -> list[str]:
        """Captures neither in ``live`` (those the session store joins to entries) nor a workspace's
        baseline, written more than ``grace`` seconds ago (a younger one may be a capture whose entry is
        about to be recorded)."""
        keep = live | self._baselines()
        now = time.time()
        dead = []
        for commit in sorted(self.captured() - keep):
            try:
                age = now - (self.root / _REF_CAPTURE / commit).stat().st_mtime
            except FileNotFoundError:
                age = float("inf")  # a packed ref: old
            if age >= grace:
                dead.append(commit)
        return dead

    def prune(self, live: set[str], *, grace: float = 3600.0, expire: str = "2.weeks.ago") -> int:
        """Forget the captures :meth:`unreached` lists, then drop the objects nothing reaches that are
        older than ``expire`` (``now`` only while no capture can be under way: the Gateway stopped).
        Returns how many captures were forgotten."""
        if not (self.root / "HEAD").exists():
            return 0
        dead = self.unreached(live, grace=grace)
        if not dead and expire != "now":
            return 0  # nothing released: the store's objects are not walked (a Gateway's start stays cheap)
        if dead:
            commands = "".join(f"delete {_REF_CAPTURE}{sha}\n" for sha in dead)
            self._run(["update-ref", "--stdin"], stdin=commands.encode())
        self._run(["prune", f"--expire={expire}"])
        self.repack(full=True)
        return len(dead)


@dataclass(frozen=True)
class _Known:
    commit: str
    tree: str
    manifest: str


@dataclass(frozen=True)
class RestorePlan:
    current: str  # the workspace now, captured for the preview
    baseline: str | None  # the workspace's last capture before this
    changes: list[Change]  # from ``current`` to the target
    hand_edited: set[str]  # paths that differ from the baseline: changed by hand since
    large_now: tuple[LargeFile, ...] = ()  # large files, recorded not copied: in the workspace now
    large_then: tuple[LargeFile, ...] = ()  # and in the target

    @property
    def paths(self) -> set[str]:
        return {c.path for c in self.changes}


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="anyy",
        GIT_AUTHOR_EMAIL="anyy@localhost",
        GIT_COMMITTER_NAME="anyy",
        GIT_COMMITTER_EMAIL="anyy@localhost",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def _split0(raw: bytes) -> list[str]:
    return sorted({os.fsdecode(p) for p in raw.split(b"\0") if p})


def _join0(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def _reachable(workspace: Path, path: str, real_dirs: dict[str, bool]) -> bool:
    """Whether every folder on the way to ``path`` is a real folder (not a symlink, a file or missing)."""
    parts = path.rstrip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        known = real_dirs.get(folder)
        if known is None:
            try:
                known = (os.lstat(workspace / folder).st_mode & 0o170000) == 0o040000
            except OSError:
                known = False
            real_dirs[folder] = known
        if not known:
            return False
    return True


def _is_regular(mode: int) -> bool:
    return (mode & 0o170000) == 0o100000


def _manifest(large: Sequence[LargeFile]) -> str:
    if not large:
        return "capture\n"
    items = [item.__dict__ for item in large]
    return json.dumps({"large": items}, sort_keys=True) + "\n"


def inherited_ignores(workspace: Path) -> list[str]:
    """The ``.gitignore`` rules (and ``.git/info/exclude``) of the folders between ``workspace`` and the top
    of the repository holding it, rewritten to apply from ``workspace``: unanchored patterns as they are,
    anchored ones under the workspace with the workspace's own path taken off, the others dropped."""
    here = workspace.resolve()
    if (here / ".git").exists():
        return []  # the top of its own repository: nothing above applies
    above: list[Path] = []
    folder = here.parent
    while True:
        above.append(folder)
        if (folder / ".git").exists():
            break
        if folder.parent == folder:
            return []  # not in a repository: git would apply no rule from above either
        folder = folder.parent
    found: list[str] = []
    for ancestor in reversed(above):  # the top first: deeper rules come later and win, as in git
        sources = [ancestor / ".gitignore"]
        if ancestor == above[-1]:
            sources.insert(0, ancestor / ".git" / "info" / "exclude")
        prefix = here.relative_to(ancestor).as_posix() + "/"
        for source in sources:
            try:
                lines = source.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                rule = _rebased(line.rstrip(), prefix)
                if rule:
                    found.append(rule)
    return found


def _rebased(line: str, prefix: str) -> str | None:
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    body = line[1:] if negated else line
    anchored = "/" in body.rstrip("/")
    if not anchored:
        return line
    body = body.lstrip("/")
    if body.startswith("**/"):
        return line
    if not body.startswith(prefix):
        return None
    return ("!" if negated else "") + "/" + body[len(prefix) :]


def _large_of(manifest: str) -> list[LargeFile]:
    try:
        data = json.loads(manifest or "{}")
    except ValueError:
        return []
    return [LargeFile(**item) for item in data.get("large", [])] if isinstance(data, dict) else []


def _durable_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content, never half."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _large(workspace: Path, path: str, info: os.stat_result, old: LargeFile | None) -> LargeFile:
    if old is not None and old.size == info.st_size and old.mtime_ns == info.st_mtime_ns:
        sha = old.sha256  # unchanged by its stat: not hashed again
    else:
        digest = hashlib.sha256()
        with open(workspace / path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
    return LargeFile(path, info.st_size, info.st_mtime_ns, sha, bool(info.st_mode & 0o111))


def _same_file(path: Path, item: LargeFile) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return _is_regular(info.st_mode) and info.st_size == item.size and info.st_mtime_ns == item.mtime_ns


def _same_content(path: Path, item: LargeFile) -> bool:
    if _same_file(path, item):
        return True
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256()
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == item.sha256


def _inside(workspace: Path, path: str) -> Path | None:
    """``workspace/path`` when every folder on the way is a real folder of the workspace (never a
    symlink, which could lead a write outside it); None otherwise."""
    parts = Path(path).parts
    if not parts or any(part in ("..", "") for part in parts) or Path(path).is_absolute():
        return None
    here = workspace
    for part in parts[:-1]:
        here = here / part
        try:
            info = here.lstat()
        except FileNotFoundError:
            here.mkdir()
            continue
        if (info.st_mode & 0o170000) != 0o040000:
            return None
    return here / parts[-1]


def _remove(workspace: Path, path: str) -> None:
    target = workspace / path
    here = workspace
    for part in Path(path).parts[:-1]:  # never through a symlink swapped in since the capture
        here = here / part
        try:
            if (here.lstat().st_mode & 0o170000) != 0o040000:
                return
        except FileNotFoundError:
            return
    try:
        info = target.lstat()
    except FileNotFoundError:
        return
    if (info.st_mode & 0o170000) == 0o040000:
        shutil.rmtree(target)
    else:
        target.unlink()
    parent = target.parent
    while parent != workspace and parent.is_relative_to(workspace):
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent


def _write(workspace: Path, path: str, mode: str, data: bytes) -> bool:
    target = _inside(workspace, path)
    if target is None:
        return False
    try:
        info = target.lstat()
    except FileNotFoundError:
        info = None
    if info is not None:
        if (info.st_mode & 0o170000) == 0o040000:
            shutil.rmtree(target)
        else:
            target.unlink()
    if mode == "120000":
        os.symlink(os.fsdecode(data), target)
        return True
    perm = 0o777 if mode == "100755" else 0o666
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, perm)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return True
