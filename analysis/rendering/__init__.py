"""The rendering: the reports' markdown, figures, HTML pages and tables as text.

It reads the typed reports; it imports the reports and the estimators, never the commands.
"""
