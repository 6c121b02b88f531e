"""The AutoDL GPU instance: checks, model download, adapter training. Standard library at import."""
