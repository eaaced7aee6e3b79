"""The estimators: pure statistics on arrays (bootstrap, sign-flip, pass@k, McNemar, power, ...).

They import nothing of the project but each other, numpy and scipy.
"""
