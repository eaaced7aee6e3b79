"""The contract every layer shares: the files the stages hand each other and the types they are made of.

Nothing here imports any other part of the project, so generation (pipeline/, augment/), scoring (scoring/),
the analyses (analysis/) and the demo may all import it without importing each other.
"""
