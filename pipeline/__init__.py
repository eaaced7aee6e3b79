"""Generation: configuration, pins, prompts, engines and the runner; the score, judge and freeze commands."""
