"""The storage conformance suite: every ``SessionStore`` backend must pass these tests unchanged."""
