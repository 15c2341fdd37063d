"""E-mail (SPEC L1): a mailbox read over IMAP, replies sent over SMTP, both with the standard library.

Each poll opens the mailbox read-only (nothing is marked read or moved: a person may share the mailbox) and
fetches the messages above the read position, ``UIDVALIDITY:UID``. That pair is the server's own name for
a message, which no sender can choose, so it is also the message's key: a message is taken once whatever
its headers say. When the server renumbers the mailbox (a new UIDVALIDITY) reading starts again at its
next UID: nothing is answered twice; a message that arrived during the renumbering may be missed.

What is trusted: the ``From`` address is the sender and is only as good as the mail server's checks
(SPF, DKIM, DMARC): anyone can write any ``From``. A message reaches the model only when its address was
paired (the service's rule), and a reply only ever goes to that address, so a forged ``From`` of a paired
address is the one attack left: use a mailbox whose server rejects mail failing DMARC for the domains of
the senders you pair, and pair few. Automatic mail (bounces, auto-replies, lists) and mail from the agent's
own address are skipped, so two robots never answer each other for ever; replies say ``Auto-Submitted``.

A reply is threaded (``In-Reply-To`` and ``References`` of the message it answers, ``Re:`` subject) and
its ``Message-ID`` is derived from what it answers and says: sent again after a crash, it is the same
message to the reader's client, which shows it once.
"""

from __future__ import annotations

import asyncio
import email.policy
import email.utils
import hashlib
import imaplib
import ipaddress
import json
import logging
import re
import smtplib
import ssl
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any
from urllib.parse import urlsplit

from anyy.channels.links import Message, SendFailed
from anyy.profiles.channels_file import ChannelSettings

log = logging.getLogger("anyy.channels.email")

TEXT_LIMIT = 60_000  # e-mail has no hard limit: a long answer stays one message
BATCH = 20  # messages fetched per poll
TIMEOUT = 60.0
_UID = re.compile(rb"UID (\d+)")
_QUOTE_HEAD = re.compile(r"^(On|Le) .+(wrote|écrit)\s*:\s*$")


class EmailLink:
    limit = TEXT_LIMIT

    def __init__(self, name: str, settings: ChannelSettings, password: str) -> None:
        self.name = name
        self.settings = settings
        self._password = password
        self._user = settings.username or settings.address
        self._own = settings.address.lower()
        self._imap: imaplib.IMAP4 | None = None

    # -- reading ------------------------------------------------------------------------------------
    async def open(self) -> None:
        try:
            await asyncio.to_thread(self._connect)
        except Exception as exc:
            raise RuntimeError(f"the IMAP server refused the login or cannot be reached: {_say(exc)}") from None

    def _connect(self) -> None:
        url = urlsplit(self.settings.imap_url)
        host = url.hostname or ""
        if url.scheme == "imaps":
            imap: imaplib.IMAP4 = imaplib.IMAP4_SSL(host, url.port or 993, timeout=TIMEOUT)
        else:
            imap = imaplib.IMAP4(host, url.port or 143, timeout=TIMEOUT)
            if not _loopback(host):  # never a password in clear beyond this machine
                imap.starttls(ssl.create_default_context())
        imap.login(self._user, self._password)
        self._imap = imap

    async def poll(self, position: str) -> list[Message]:
        try:
            messages = await asyncio.to_thread(self._read, position)
        except (imaplib.IMAP4.abort, OSError):  # the connection broke: once more on a new one
            self._drop()
            await asyncio.to_thread(self._connect)
            messages = await asyncio.to_thread(self._read, position)
        except Exception:  # a refusal: the next poll starts on a new connection
            await asyncio.to_thread(self._drop)
            raise
        if not messages:
            await asyncio.sleep(self.settings.poll_seconds)
        return messages

    def _read(self, position: str) -> list[Message]:
        if self._imap is None:
            self._connect()
        imap = self._imap
        assert imap is not None
        status, _ = imap.select("INBOX", readonly=True)
        if status != "OK":
            raise RuntimeError("the mailbox has no INBOX")
        validity = _untagged(imap, "UIDVALIDITY")
        after = 0
        seen_validity, _, seen_uid = position.partition(":")
        if seen_validity != validity:
            # the first poll, or a renumbered mailbox: read from the next message on
            start = int(_untagged(imap, "UIDNEXT") or "1") - 1
            if position:
                log.warning("channel %s: the mailbox was renumbered; reading from its next message", self.name)
            mark = f"{validity}:{start}"
            return [Message(key=f"start:{mark}", position=mark, sender="", conversation="", text="")]
        after = int(seen_uid or "0")
        status, found = imap.uid("SEARCH", "UID", f"{after + 1}:*")
        uids = sorted(int(u) for u in (found[0] or b"").split() if int(u) > after)[:BATCH]
        messages = []
        for uid in uids:
            status, data = imap.uid("FETCH", str(uid), "(UID BODY.PEEK[])")
            raw = next((part[1] for part in data if isinstance(part, tuple) and _UID.search(part[0])), None)
            mark = f"{validity}:{uid}"
            if status != "OK" or raw is None:  # expunged meanwhile
                messages.append(Message(key=mark, position=mark, sender="", conversation="", text=""))
                continue
            messages.append(self._message(mark, raw))
        return messages

    def _message(self, mark: str, raw: bytes) -> Message:
        skipped = Message(key=mark, position=mark, sender="", conversation="", text="")
        parsed = BytesParser(policy=email.policy.default).parsebytes(raw)
        if _automatic(parsed):
            return skipped
        senders = email.utils.getaddresses(parsed.get_all("From", []))
        if len(senders) != 1 or "@" not in senders[0][1]:
            return skipped
        label, address = senders[0]
        address = address.strip().lower()
        if address == self._own:
            return skipped
        message_id = str(parsed.get("Message-ID", "")).strip()
        references = str(parsed.get("References", "")).split()
        if message_id:
            references.append(message_id)
        conversation = {
            "to": address,
            "re": message_id,
            "refs": references[-10:],
            "subject": " ".join(str(parsed.get("Subject", "")).split()),
        }
        return Message(
            key=mark,
            position=mark,
            sender=address,
            conversation=json.dumps(conversation, ensure_ascii=False, sort_keys=True),
            text=_text(parsed),
            label=label or address,
        )

    # -- sending ------------------------------------------------------------------------------------
    async def send(self, conversation: str, text: str) -> str:
        mail = self._reply(conversation, text)
        try:
            await asyncio.to_thread(self._send, mail)
        except smtplib.SMTPRecipientsRefused as exc:
            raise SendFailed(f"the SMTP server refused the address: {_say(exc)}", permanent=True) from None
        except smtplib.SMTPAuthenticationError as exc:
            raise SendFailed(f"the SMTP server refused the login: {_say(exc)}") from None
        except smtplib.SMTPResponseException as exc:
            permanent = 500 <= exc.smtp_code < 600
            raise SendFailed(f"the SMTP server refused the message: {_say(exc)}", permanent=permanent) from None
        except Exception as exc:
            raise SendFailed(f"sending by SMTP failed: {_say(exc)}") from None
        return str(mail["Message-ID"])

    def _reply(self, conversation: str, text: str) -> EmailMessage:
        thread = json.loads(conversation)
        subject = thread.get("subject") or "(no subject)"
        if not subject.lower().startswith("re:"):
            subject = f"Re: {subject}"
        domain = self._own.rpartition("@")[2]
        digest = hashlib.sha256(f"{conversation}\n{text}".encode()).hexdigest()[:32]
        mail = EmailMessage()
        mail["From"] = self.settings.address
        mail["To"] = thread["to"]
        mail["Subject"] = subject
        mail["Date"] = email.utils.formatdate(localtime=False)
        mail["Message-ID"] = f"<anyy.{digest}@{domain}>"
        mail["Auto-Submitted"] = "auto-replied"
        if thread.get("re"):
            mail["In-Reply-To"] = thread["re"]
        if thread.get("refs"):
            mail["References"] = " ".join(thread["refs"])
        mail.set_content(text)
        return mail

    def _send(self, mail: EmailMessage) -> None:
        url = urlsplit(self.settings.smtp_url)
        host = url.hostname or ""
        smtp: smtplib.SMTP
        if url.scheme == "smtps":
            smtp = smtplib.SMTP_SSL(host, url.port or 465, timeout=TIMEOUT)
        else:
            smtp = smtplib.SMTP(host, url.port or 587, timeout=TIMEOUT)
        with smtp:
            smtp.ehlo()
            if url.scheme == "smtp" and not _loopback(host):
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if smtp.has_extn("auth"):
                smtp.login(self._user, self._password)
            smtp.send_message(mail)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._drop)

    def _drop(self) -> None:
        imap, self._imap = self._imap, None
        if imap is not None:
            try:
                imap.logout()
            except Exception as exc:  # already broken: nothing to close
                log.debug("channel %s: IMAP logout: %s", self.name, _say(exc))


def _untagged(imap: imaplib.IMAP4, name: str) -> str:
    values: Any = imap.untagged_responses.get(name) or [b""]
    value = values[-1]
    return value.decode() if isinstance(value, bytes) else str(value)


def _automatic(parsed: EmailMessage) -> bool:
    """Mail that no person wrote (RFC 3834): answering it could loop with another robot."""
    if str(parsed.get("Auto-Submitted", "no")).strip().lower() != "no":
        return True
    if str(parsed.get("Precedence", "")).strip().lower() in ("bulk", "junk", "list"):
        return True
    if parsed.get("List-Id") is not None or str(parsed.get("Return-Path", "")).strip() == "<>":
        return True
    sender = email.utils.parseaddr(str(parsed.get("From", "")))[1].lower()
    return sender.startswith(("mailer-daemon@", "postmaster@"))


def _text(parsed: EmailMessage) -> str:
    """The plain-text body, without the quoted message it answers and the signature."""
    body = parsed.get_body(preferencelist=("plain",))
    if body is None:
        return ""
    content = body.get_content() if isinstance(body, EmailMessage) else ""
    lines: list[str] = []
    for line in str(content).splitlines():
        if line.rstrip() == "--":  # the signature
            break
        if line.startswith(">"):
            continue
        lines.append(line)
    while lines and (not lines[-1].strip() or _QUOTE_HEAD.match(lines[-1].strip())):
        lines.pop()
    return "\n".join(lines).strip()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _say(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
