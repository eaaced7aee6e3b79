"""Importers of other tools' logs into the EvalLog: lm-evaluation-harness, Inspect AI, lighteval.

python -m interop.imports {lm-eval,inspect,lighteval} SRC... --out LOG
"""
