"""Profiles: a folder per person (settings, state.db, objects, memory, roles) under the anyy home."""
