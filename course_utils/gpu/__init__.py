"""The GPU instance (AutoDL RTX 4090): checks, downloads, adapter training. Standard library at import."""
