"""gpumem.run."""
