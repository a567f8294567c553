"""Training: ``train()`` and the loop that ties a run's pieces together (one update, validation
through search, the stopping rules, the model directory's rules, the train state that resumes a
run, reporting), learning-rate schedules, data parallelism, checkpoint averaging, and what
training reads from a data directory."""
