"""The GPU a lab runs on: who holds its memory, and whether the lab fits before vLLM starts (:mod:`.free`)."""
