"""anyy: a personal agent runtime whose conversations last."""

__version__ = "0.1.0"
