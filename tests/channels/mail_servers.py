"""Real mail servers on loopback for the e-mail channel's tests: Debian's Dovecot serving IMAP (installed by
scripts/setup-mail) with a mailbox of its own in a temporary folder, and aiosmtpd receiving SMTP.

A test delivers a person's mail into the agent's mailbox with IMAP APPEND (what a mail server's delivery
does), and reads the agent's replies as the SMTP server received them.
"""

from __future__ import annotations

import email.policy
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

DOVECOT = "/usr/sbin/dovecot"
ADDRESS = "agent@example.test"
PASSWORD = "mailbox-secret-0123456789"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Dovecot:
    """One Dovecot instance: IMAP without TLS on a loopback port, one user (``ADDRESS``)."""

    def __init__(self) -> None:
        if not os.path.exists(DOVECOT):
            raise RuntimeError("Dovecot is not installed: run scripts/setup-mail (scripts/test does)")
        self.dir = Path(tempfile.mkdtemp(prefix="anyy-dovecot-"))
        self.dir.chmod(0o755)  # the mail processes run as the dovecot user
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def start(self) -> Dovecot:
        mail, run = self.dir / "mail", self.dir / "run"
        mail.mkdir()
        run.mkdir()
        user = pwd.getpwnam("dovecot") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
        os.chown(mail, user.pw_uid, user.pw_gid)
        (self.dir / "users").write_text(f"{ADDRESS}:{{PLAIN}}{PASSWORD}\n")
        conf = self.dir / "dovecot.conf"
        conf.write_text(
            f"""base_dir = {run}
state_dir = {run}/state
log_path = {self.dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:{mail}/%u
default_login_user = {user.pw_name}
default_internal_user = {user.pw_name}
first_valid_uid = 1
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.dir}/users
}}
userdb {{
  driver = static
  args = uid={user.pw_uid} gid={user.pw_gid} home={mail}/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
}}
service anvil {{
  chroot =
}}
"""
        )
        self.process = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)], stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60.0
        while True:  # readiness: the port answers (a server starting, not a test's timing)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5.0):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (self.dir / "dovecot.log").read_text() if (self.dir / "dovecot.log").exists() else ""
                    raise RuntimeError(f"Dovecot did not start: {log}") from None
                time.sleep(0.05)
        return self

    @property
    def url(self) -> str:
        return f"imap://127.0.0.1:{self.port}"

    def deliver(self, sender: str, text: str, *, subject: str = "hello", **headers: str) -> str:
        """Put a person's message in the agent's mailbox; its Message-ID."""
        mail = EmailMessage()
        mail["From"] = sender
        mail["To"] = ADDRESS
        mail["Subject"] = subject
        mail["Message-ID"] = headers.pop("message_id", None) or f"<{time.monotonic_ns()}@people.test>"
        for name, value in headers.items():
            mail[name.replace("_", "-")] = value
        mail.set_content(text)
        with self.lock:
            imap = imaplib.IMAP4("127.0.0.1", self.port, timeout=30.0)
            try:
                imap.login(ADDRESS, PASSWORD)
                status, _ = imap.append("INBOX", None, None, mail.as_bytes())
                assert status == "OK"
            finally:
                imap.logout()
        return str(mail["Message-ID"])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(30.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for _ in range(3):  # a mail process of the dovecot user may still be writing as the master ends
            shutil.rmtree(self.dir, ignore_errors=True)
            if not self.dir.exists():
                break


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: EmailMessage

    @property
    def text(self) -> str:
        body = self.message.get_body(preferencelist=("plain",))
        assert isinstance(body, EmailMessage)
        return str(body.get_content()).strip()

    def __getitem__(self, header: str) -> str:
        return str(self.message.get(header, ""))


class SmtpSink:
    """aiosmtpd on a loopback port, keeping every message it accepts."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self._lock = threading.Condition()
        self.refuse = False  # answer 451 (try later) to every message while set
        self.refused = 0
        self.controller: Any = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse:
            with self._lock:
                self.refused += 1
                self._lock.notify_all()
            return "451 try again later"
        message = BytesParser(policy=email.policy.default).parsebytes(envelope.content)
        assert isinstance(message, EmailMessage)
        with self._lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
            self._lock.notify_all()
        return "250 OK"

    def start(self) -> SmtpSink:
        from aiosmtpd.controller import Controller

        self.controller = Controller(self, hostname="127.0.0.1", port=_free_port())
        self.controller.start()
        return self

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.controller.port}"

    def wait_received(self, count: int, timeout: float = 60.0) -> list[Received]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.received) >= count, timeout):
                texts = "\n".join(r.text for r in self.received)
                raise AssertionError(f"the agent sent {len(self.received)} mails, not {count}:\n{texts}")
            return list(self.received)

    def wait_until(self, done: Callable[[list[Received]], bool], timeout: float = 120.0) -> list[Received]:
        """Once ``done`` holds of what the agent sent: all it sent."""
        with self._lock:
            if not self._lock.wait_for(lambda: done(list(self.received)), timeout):
                raise AssertionError(
                    "the agent did not send what was expected:\n" + "\n".join(r.text for r in self.received)
                )
            return list(self.received)

    def wait_refused(self, count: int, timeout: float = 60.0) -> None:
        with self._lock:
            if not self._lock.wait_for(lambda: self.refused >= count, timeout):
                raise AssertionError(f"the agent tried {self.refused} times, not {count}")

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
