"""Analysis of MDPs and of saved regret results (NumPy/SciPy, outside ``jit``)."""
