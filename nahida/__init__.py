"""Nahida: a local-first chat bot with a long-term memory people can see and correct."""

__version__ = "0.1.0"
