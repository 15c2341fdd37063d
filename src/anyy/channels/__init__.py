"""Channels (SPEC L1-L4): the Gateway side of Telegram and the platforms to come (docs/channels.md)."""
