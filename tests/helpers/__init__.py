"""Helpers the test modules share: worlds of files, commands, stubs (no test module imports another)."""
