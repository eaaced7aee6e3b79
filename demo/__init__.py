"""The demo world: its model family, suite, corpus, training and the tiny checkpoints the tests train."""
