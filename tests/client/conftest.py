from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.profiles.gateway_address import Address
from tests.gateway.live import LiveGateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[LiveGateway]:
    """A Gateway served on 127.0.0.1 (port 0) with a scripted offline model, in this process."""
    with LiveGateway(tmp_path) as live:
        yield live


def address_of(live: LiveGateway, *, token: str | None = None) -> Address:
    """What the Gateway would publish in gateway.json."""
    return Address(
        profile=live.profile.name,
        pid=os.getpid(),
        host="127.0.0.1",
        port=live.port,
        token=live.token if token is None else token,
        started_at=0.0,
    )
