-- Why a Background session exists (SPEC K4): a JSON object {kind: schedule|delegate|resident, name,
-- schedule_id, scheduled_for, parent_session_id, parent_call_id, resident_id}; NULL for chats and forks.
ALTER TABLE sessions ADD COLUMN origin TEXT;
