"""holon evals."""
