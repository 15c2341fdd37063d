"""Which network addresses ``web_fetch`` may reach (SPEC N3): public ones only, unless the profile allows.

A host name is resolved once, every address it resolves to is checked, and the connection is then made to
a checked address (never resolved again, so a DNS answer that changes between check and use cannot lead
elsewhere). Numeric forms are resolved the way the C library reads them (``2130706433``, ``0x7f.1``,
``0177.0.0.1`` all name 127.0.0.1) and checked as what they resolve to; IPv4 inside IPv6 (mapped,
compatible, 6to4, NAT64, Teredo) is checked as the IPv4 address it carries.
"""

from __future__ import annotations

import ipaddress
import socket

from anyy.tools.builtin import ToolFailure

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def refusal(address: IPAddress) -> str:
    """Why ``address`` is not public (``""`` when it is)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "a scoped (link-local) address"
        inner = _embedded_ipv4(address)
        if inner is not None:
            reason = refusal(inner)
            return f"{reason} (as IPv4 inside IPv6)" if reason else ""
    checks = (
        ("a loopback address", address.is_loopback),
        ("an unspecified address", address.is_unspecified),
        ("a link-local address", address.is_link_local),
        ("a private address", address.is_private),
        ("a multicast address", address.is_multicast),
        ("a reserved address", address.is_reserved),
        ("a non-global address", not address.is_global),
    )
    return next((reason for reason, hit in checks if hit), "")


def resolve(host: str, port: int, *, allow_private: bool) -> list[IPAddress]:
    """The addresses to connect to for ``host``; :class:`ToolFailure` when any of them is not public."""
    name = host.strip("[]")
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as error:
        raise ToolFailure(f"cannot resolve the host {host!r}: {error}") from None
    addresses: list[IPAddress] = []
    for info in infos:
        raw = str(info[4][0])
        address = ipaddress.ip_address(raw.split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and "%" in raw:
            address = ipaddress.IPv6Address(raw)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise ToolFailure(f"the host {host!r} has no address")
    if not allow_private:
        for address in addresses:
            reason = refusal(address)
            if reason:
                raise ToolFailure(
                    f"web_fetch does not reach {host!r}: it resolves to {address}, {reason}. Only public "
                    "addresses are fetched ([tools.web_fetch] allow_private = true in config.toml allows "
                    "the others)"
                )
    return addresses
