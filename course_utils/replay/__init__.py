"""Record live results; replay them in read mode (one layer for every lab)."""
