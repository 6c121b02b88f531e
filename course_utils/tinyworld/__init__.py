"""The tiny world: synthetic tasks, the trainer of the tiny base and its adapters, the quality gate, a demo."""
