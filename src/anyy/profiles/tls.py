"""TLS for a Gateway reachable beyond loopback (O1): the rule (loopback may speak plain HTTP, anything else
only TLS), the profile's own certificate authority, and how local clients trust the Gateway they started.

The profile's CA lives in ``PROFILE/tls/`` (directory 0700, keys 0600): ``ca.pem`` is what a paired device
trusts (its SHA-256 fingerprint travels in the pairing code), ``server.pem``/``server.key`` the Gateway's
certificate, issued by that CA for the names it is reached by and re-issued when a name is missing or the
certificate nears its end. ``cryptography`` is imported only when a certificate is made.

Local clients (the CLI, the TUI) read ``gateway.json``, which names the certificate the Gateway serves: they
pin that exact certificate (whatever signed it, the user's or the profile's CA), so they never need the
Gateway's public name to match the address they dial.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import ipaddress
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from anyy.domain.errors import InvalidInput
from anyy.profiles.profile import Profile

TLS_DIR = "tls"
CA_DAYS = 3650
SERVER_DAYS = 397  # what browsers accept for a leaf certificate
RENEW_BEFORE = datetime.timedelta(days=30)
HSTS = "max-age=31536000"  # no includeSubDomains: the Gateway speaks for itself only


@dataclass(frozen=True)
class TlsFiles:
    """What the Gateway serves: its certificate (with the chain) and key, and the CA a device should trust
    (None: the user's certificate, trusted however the user arranged)."""

    cert: Path
    key: Path
    ca: Path | None = None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only: ``localhost`` or an address in 127.0.0.0/8 or
    ``::1``. A wildcard (0.0.0.0, ::) or any other address is reachable from the network."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything, so it is treated as reachable


def is_address(host: str) -> bool:
    """An IP address written out (a name is only checked once bound: a wrong one is said as such)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def require_tls(host: str, tls: TlsFiles | None) -> None:
    """InvalidInput, saying how to fix it, for a Gateway bound beyond loopback without TLS."""
    if tls is None and not is_loopback(host):
        raise InvalidInput(
            f"refusing to listen on {host} without TLS: anyone on that network could read the profile's "
            "traffic. Add --tls (a certificate from this profile's own authority, which `anyy devices pair` "
            "hands to your phone), or --tls-cert FILE --tls-key FILE (your own certificate); or keep the "
            "default 127.0.0.1 and reach it through an SSH tunnel or Tailscale (docs/remote.md)"
        )


def user_files(cert: str, key: str) -> TlsFiles:
    """The user's own certificate and key, checked now (a bad file is said here, not by a TLS stack later)."""
    paths = [Path(cert).expanduser(), Path(key).expanduser()]
    for path, what in zip(paths, ("--tls-cert", "--tls-key"), strict=True):
        if not path.is_file():
            raise InvalidInput(f"{what} {path}: no such file; give the PEM file of your certificate and its key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(paths[0], paths[1])
    except (ssl.SSLError, OSError) as exc:
        raise InvalidInput(
            f"--tls-cert {paths[0]} / --tls-key {paths[1]}: not a certificate and its matching key in PEM ({exc})"
        ) from None
    return TlsFiles(cert=paths[0].resolve(), key=paths[1].resolve())


def tls_files(  # noqa: PLR0917 - the Gateway's options, in their order
    profile: Profile, host: str, own_ca: bool, cert: str | None, key: str | None, names: tuple[str, ...] = ()
) -> TlsFiles | None:
    """What the Gateway's options ask for: the user's files, the profile CA's certificate, or plain HTTP."""
    if (cert is None) != (key is None):
        raise InvalidInput("give both --tls-cert FILE and --tls-key FILE (your certificate and its key), or --tls")
    if cert is not None and key is not None:
        if own_ca:
            raise InvalidInput("choose --tls (this profile's own CA) or --tls-cert/--tls-key (yours), not both")
        return user_files(cert, key)
    if own_ca or names:
        return profile_files(profile, host, names)
    return None


def tls_dir(profile: Profile) -> Path:
    path = profile.path / TLS_DIR
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def ca_fingerprint(pem: bytes) -> str:
    """SHA-256 of the certificate's DER form, as hex pairs: what a device compares before trusting it."""
    der = ssl.PEM_cert_to_DER_cert(pem.decode("ascii"))
    return hashlib.sha256(der).hexdigest()


def profile_files(profile: Profile, host: str, names: tuple[str, ...] = ()) -> TlsFiles:
    """The profile CA's certificate for this Gateway: the CA made once, the server certificate issued (again)
    when it does not name ``host`` and ``names`` or ends within 30 days."""
    directory = tls_dir(profile)
    ca_cert, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key = directory / "server.pem", directory / "server.key"
    wanted = _names_for(host, names)
    if not ca_cert.exists() or not ca_key.exists():
        _make_ca(profile, ca_cert, ca_key)
    if not cert.exists() or not key.exists() or not _covers(cert.read_bytes(), wanted):
        _issue(ca_cert, ca_key, cert, key, wanted)
    return TlsFiles(cert=cert, key=key, ca=ca_cert)


def _names_for(host: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """What the certificate names: the bound address (or, on a wildcard, this machine's addresses), this
    machine's name, loopback, and what the user added with --tls-name."""
    found = ["localhost", "127.0.0.1", "::1", socket.gethostname(), *names]
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - a wildcard read, not bound
        with contextlib.suppress(OSError):
            found += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
    else:
        found.append(host.strip("[]"))
    seen: dict[str, None] = {}
    for name in found:
        if name and "%" not in name:
            seen.setdefault(name.lower(), None)
    return tuple(seen)


def _alt_names(names: tuple[str, ...]) -> list[object]:
    from cryptography import x509

    out: list[object] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _covers(pem: bytes, names: tuple[str, ...]) -> bool:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(pem)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    if cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) < RENEW_BEFORE:
        return False
    present = {str(v).lower() for v in sans.get_values_for_type(x509.DNSName)}
    present |= {str(v) for v in sans.get_values_for_type(x509.IPAddress)}
    return all(_canonical(n) in present for n in names)


def _canonical(name: str) -> str:
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name.lower()


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _make_ca(profile: Profile, cert_path: Path, key_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"anyy profile {profile.name} CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    _write_private(key_path, pem)
    _write_private(cert_path, cert.public_bytes(serialization.Encoding.PEM))


def _issue(ca_cert_path: Path, ca_key_path: Path, cert_path: Path, key_path: Path, names: tuple[str, ...]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise InvalidInput(f"{ca_key_path} is not this profile's CA key: remove {ca_key_path.parent} to make a new CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.SubjectAlternativeName(_alt_names(names)), critical=False)  # type: ignore[arg-type]
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    _write_private(key_path, pem)
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
    _write_private(cert_path, chain)


def pinned_context(cert_path: str) -> ssl.SSLContext:
    """For local clients: trust exactly the certificate the Gateway published in gateway.json (the first of
    its chain), whoever signed it; the address dialled need not be a name it carries."""
    pem = Path(cert_path).read_text("ascii")
    leaf = pem[: pem.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")] + "\n"
    context = ssl.create_default_context(cadata=leaf)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # a leaf as its own trust anchor
    context.check_hostname = False  # the pin is the whole certificate, stronger than a name
    return context
