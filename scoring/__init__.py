"""Scoring: the suite's verifiers and the path evaluation applied to generations, giving one EvalLog per arm.

Scoring reads only the contract (generations, suite, EvalLog); it never imports an engine, so a fix to
answer checking reruns only the score stages, on the CPU, in seconds.
"""
