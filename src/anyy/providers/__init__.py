"""Model providers behind one protocol: offline, OpenAI-compatible, Anthropic. SDKs load only when used."""
