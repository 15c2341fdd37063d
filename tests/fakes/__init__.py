"""Fakes shared by tests: a loopback model server speaking the OpenAI and Anthropic streaming APIs."""
