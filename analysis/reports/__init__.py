"""The reports: logs loaded and aligned, and each report built as its typed model (report_models).

They import the estimators and the contract, never the rendering or the commands.
"""
