"""The TUI (`anyy`): a Textual client of the profile's Gateway, speaking only its JSON-RPC API over a
WebSocket (SPEC B2, B3, Q4, Q5, S2-S5). It never imports the Gateway, the runtime, providers or tools."""
