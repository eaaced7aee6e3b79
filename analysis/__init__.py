"""The estimators, the reports and the pages: everything after the EvalLogs."""
