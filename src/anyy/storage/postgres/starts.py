"""A session created with its first message, in one transaction (U1)."""

from __future__ import annotations

from anyy.domain.queue import NewSubmission, Submission, check_new_submission, same_send
from anyy.domain.sessions import NewSession, Session
from anyy.storage.postgres.queue import QueuePart
from anyy.storage.postgres.sessions import SessionsPart
from commons.ids import new_id


class StartsPart(SessionsPart, QueuePart):
    def start_session(self, new: NewSession, first: NewSubmission) -> tuple[Session, Submission]:
        first = check_new_submission(first)
        submission_id = new_id("sub")
        with self._tx() as conn:
            if first.key is not None:
                # Two sends with one key at once (a retry racing the first, or two Gateways) take turns here:
                # the second finds the first's session instead of creating one.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"send:{first.key}",))
                found = conn.execute(
                    "SELECT s.id, x.id FROM submissions s JOIN sessions x ON x.num = s.session_num "
                    "WHERE s.idem_key = %s AND x.status = 'active' ORDER BY s.num LIMIT 1",
                    (first.key,),
                ).fetchone()
                if found is not None:  # a retried send: the first one's session and submission, nothing added
                    return self.get_session(found[1]), same_send(self.get_submission(found[0]), first)
            session_id, num = self._insert_session(conn, new)
            self._insert_submission(conn, num, submission_id, first, self.clock())
            self._notify(session_id, "work")
            self._notify(session_id, "change")
        self._nums[session_id] = num
        return self.get_session(session_id), self.get_submission(submission_id)
