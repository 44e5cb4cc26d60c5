"""gpumem.contracts."""
