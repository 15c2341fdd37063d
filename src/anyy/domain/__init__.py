"""The domain: pure rules over sessions, entries, submissions and executions. No I/O here."""
