"""The training run."""
