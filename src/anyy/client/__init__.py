"""anyy's one JSON-RPC client of the Gateway, for the CLI and the TUI (docs/architecture.md, "The layers").

- :mod:`anyy.client.protocol`: the core without I/O (request ids, frames decoded into replies and events);
- :mod:`anyy.client.sync`: the synchronous front end (``connect``, ``profile_client``);
- :mod:`anyy.client.aio`: the asynchronous one (``AsyncClient``), for an event loop;
- :mod:`anyy.client.errors`: one exception hierarchy over the stable error codes;
- :mod:`anyy.client.gateway` and :mod:`anyy.client.launch`: finding and starting a profile's Gateway.

Submodules are imported where used: ``anyy --help`` does not load the WebSocket library.
"""
