"""gpumem architecture plugin h200t, written by gpumem plugin new (its products: expected.PRODUCTS)."""

__version__ = "0.1.0"
