"""ameesh: an orchestrator of coding agents that keeps each one on its harness session."""

__version__ = "0.1.0"
