"""Generation: configuration, pins, prompts, engines, the runner, the scorer, importers of other logs."""
