"""The store URL a profile names, checked and connected, with errors that name the setting to fix."""

from __future__ import annotations

import os
from typing import Any

import psycopg
from psycopg import conninfo

from anyy.storage.store_urls import POSTGRES_SCHEMES, StoreSettingError, redact

# Where a URL comes from, when the caller does not say: both places a profile can set it.
DEFAULT_SETTING = "[store] url in the profile's config.toml (or ANYY_STORE_URL)"
CONNECT_TIMEOUT = 10  # seconds


def is_postgres_url(url: str) -> bool:
    return url.startswith(POSTGRES_SCHEMES)


def check_url(url: str, *, setting: str = DEFAULT_SETTING) -> dict[str, Any]:
    """The URL's connection parameters, or a StoreSettingError saying what is wrong with it."""
    if not is_postgres_url(url):
        raise StoreSettingError(
            f"{setting} is {redact(url)!r}: a store URL starts with postgresql:// "
            "(e.g. postgresql://user@host:5432/anyy); remove the setting to use the profile's SQLite state.db"
        )
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise StoreSettingError(f"{setting} is not a valid PostgreSQL URL ({redact(url)}): {exc}") from None
    if not params.get("dbname"):
        raise StoreSettingError(
            f"{setting} ({redact(url)}) names no database: add one after the host, e.g. postgresql://host/anyy"
        )
    return params


def connect(
    url: str, *, setting: str = DEFAULT_SETTING, schema: str | None = None, timeout: int = CONNECT_TIMEOUT
) -> psycopg.Connection[Any]:
    """An autocommit connection (transactions are explicit), or an error naming the setting."""
    params = check_url(url, setting=setting)
    where = f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}"
    extra: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = timeout
    if "application_name" not in params:  # which process a connection is, for an operator (pg_stat_activity)
        extra["application_name"] = f"anyy-{os.getpid()}"
    if schema is not None:
        extra["options"] = f"-c search_path={schema}"
    try:
        return psycopg.connect(url, **extra)
    except psycopg.OperationalError as exc:
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        if "does not exist" in detail and "database" in detail:
            raise StoreSettingError(
                f"the database {params['dbname']!r} does not exist on {where} ({setting}): create it "
                f"(createdb {params['dbname']}) or correct the URL"
            ) from None
        if "authentication" in detail or "password" in detail:
            raise StoreSettingError(
                f"PostgreSQL at {where} refused the login of {setting} ({detail}): check the user and password"
            ) from None
        raise StoreSettingError(
            f"no PostgreSQL server answers at {where} ({setting}): {detail}. Start the server, or correct the URL"
        ) from None
