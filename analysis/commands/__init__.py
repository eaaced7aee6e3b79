"""The command-line fronts (python -m analysis.commands.NAME): options, reading, writing, exit codes.

Each is a thin main over the reports and the rendering.
"""
