"""A session created with its first message, both or neither (U1)."""

from __future__ import annotations

from anyy.domain.queue import NewSubmission, Submission, check_new_submission, same_send
from anyy.domain.sessions import NewSession, Session
from anyy.storage.memory.data import copied
from anyy.storage.memory.queue import QueuePart


class StartsPart(QueuePart):
    def start_session(self, new: NewSession, first: NewSubmission) -> tuple[Session, Submission]:
        first = check_new_submission(first)
        self._check_open()
        self._check_attachments(first.attachments)  # checked before anything is added
        if first.key is not None:
            for record in self.data.submissions.values():
                held = self.data.sessions.get(record.submission.session_id)
                if record.key == first.key and held is not None and held.active:
                    found = copied(record.submission)
                    return self.get_session(found.session_id), same_send(found, first)
        session = self.create_session(new)
        return self.get_session(session.id), self.add_submission(session.id, first)
