"""The benchmarks: commands that print measured tables (`panewatch bench …`), never timed tests."""
