"""Analysis of MDPs and of learners: quantities derived from a solved MDP, and statistics
of saved regret results.

``jaxmdp.analysis.lower_bound`` holds the gaps and the Burnetas–Katehakis regret lower
bound; ``jaxmdp.analysis.sensitivity`` their derivatives, and those of the gain and of
the agents' indices, with respect to the MDP; ``jaxmdp.analysis.hardness`` exact
hardness measures (gain, bias span, diameter, mixing time, gaps, lower-bound constant);
``jaxmdp.analysis.statistics`` confidence intervals and comparisons of regret
(NumPy/SciPy, outside ``jit``).
"""

from jaxmdp.analysis import hardness, lower_bound, sensitivity, statistics

__all__ = ["hardness", "lower_bound", "sensitivity", "statistics"]
