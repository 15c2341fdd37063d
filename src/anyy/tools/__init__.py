"""Built-in tools the agent calls (M6), and Codemode."""
