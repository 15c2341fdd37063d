"""Storage: the ``SessionStore`` protocol (``protocol``) and its backends: SQLite (``sqlite``, a profile's
``state.db``, the default), PostgreSQL (``postgres``, shared by several Gateways) and an in-memory store
(``memory``, the executable reference the conformance suite checks the others against). ``choose`` opens
the one a store URL names."""
