"""What the Gateway says about itself, its models, subscriptions and backups."""

from __future__ import annotations

import msgspec

from anyy.api.devices import Exposure


class ProviderInfo(msgspec.Struct, kw_only=True):
    """One provider as a selector shows it. ``models`` empty: any model name is accepted."""

    name: str
    kind: str
    base_url: str
    models: list[str]
    images: bool = True  # whether its models read images: a client refuses an image attachment otherwise (U5)


class AliasInfo(msgspec.Struct, kw_only=True):
    name: str
    provider: str
    model: str


class Models(msgspec.Struct, kw_only=True):
    providers: list[ProviderInfo]
    aliases: list[AliasInfo]


class ServiceGateway(msgspec.Struct, kw_only=True):
    """One Gateway of a service sharing a PostgreSQL store (P6)."""

    id: str
    address: str
    pid: int
    host: str
    started: float
    last_seen: float
    alive: bool  # renewed within its lease
    sessions: list[str]  # the sessions it holds a lease on (running, or about to)


class Held(msgspec.Struct, kw_only=True):
    """What the Gateway keeps in memory now (D13): per-session state returns to nothing once work ends."""

    actors: int = 0  # sessions with a worker in memory: those with work running, queued or unsettled
    contexts: int = 0  # sessions whose model context is kept for their next turn (bounded, oldest dropped)
    subscriptions: int = 0  # event subscriptions open (clients', waits', the Gateway's own)
    watched: int = 0  # with a shared store: sessions another Gateway runs whose changes this one follows
    trims: int = 0  # times unused heap memory was handed back to the system (a second after work ends)
    rss: int = 0  # the process's resident memory in bytes (0 where the system does not say)


class Status(msgspec.Struct, kw_only=True):
    profile: str
    version: str
    pid: int
    started_at: float
    sandbox: str = ""  # how shell and Codemode are confined, or why they are not (N3)
    gateway_id: str = ""  # with a shared store: this Gateway's id in the service
    service: list[ServiceGateway] = []  # with a shared store: every Gateway of the service, this one too
    held: Held = msgspec.field(default_factory=Held)  # what is kept in memory now (D13)
    hooks: list[str] = []  # the user's hooks that are not run now, and why (N6): untrusted, changed, missing
    exposure: Exposure | None = None  # how it is reachable: address, TLS, devices (O4)


class Subscribed(msgspec.Struct, kw_only=True):
    subscription: str


class BackupCounts(msgspec.Struct, kw_only=True):
    sessions: int = 0  # active sessions (deleted ones whose entries a fork keeps are in the database too)
    entries: int = 0
    submissions: int = 0
    objects: int = 0
    memory_files: int = 0
    role_files: int = 0


class BackupReport(msgspec.Struct, kw_only=True):
    path: str
    profile: str
    created_at: float
    size: int  # bytes of the archive
    counts: BackupCounts
    members: int
    missing_objects: list[str] = []  # referenced by the snapshot but absent from objects/


class DashboardCode(msgspec.Struct, kw_only=True):
    code: str
    expires_in: float  # seconds


class RenderResult(msgspec.Struct, kw_only=True):
    html: list[str]
