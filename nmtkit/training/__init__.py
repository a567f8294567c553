"""Training: the trainer and its loop, validation through search, learning-rate schedules, and
what training reads from a data directory."""
