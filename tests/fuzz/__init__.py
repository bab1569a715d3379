"""Coverage-guided fuzzing with atheris: targets (targets.py), a runner (run.py), seed corpora (corpus/)."""
