"""holon gateway."""
