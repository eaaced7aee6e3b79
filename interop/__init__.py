"""Other tools' logs, both directions: their per-sample files into EvalLogs, and EvalLogs into Inspect's.

Their per-sample files into EvalLogs (`python -m interop.imports`), and EvalLogs into Inspect AI's logs
(`python -m interop.inspect_export`).

Nothing of the project imports this package: it turns files into files the pipeline and the analyses read
(EvalLogs), or reads theirs. Words used throughout: an import file is the file another tool wrote that a
command is given (SRC), read into a `ToolFile`; `--field TARGET=SOURCE` names a field of its lines, and
`source_score` (an EvalLog field) is the tool's own score of a sample, kept beside this project's verdict.
"""
