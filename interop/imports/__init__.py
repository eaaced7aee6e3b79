"""Importers of other tools' logs into the EvalLog: lm-evaluation-harness, Inspect AI, lighteval, any JSONL.

python -m interop.imports {lm-eval,inspect,lighteval} SRC... --out LOG
python -m interop.imports jsonl FILE... --suite S --temperature T --max-tokens N --out LOG
"""
