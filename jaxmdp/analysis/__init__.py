"""Analysis of MDPs and of learners: quantities derived from a solved MDP, and statistics
of saved regret results.

:mod:`jaxmdp.analysis.lower_bound` holds the gaps and the Burnetas–Katehakis regret lower
bound; :mod:`jaxmdp.analysis.sensitivity` their derivatives, and those of the gain and of
the agents' indices, with respect to the MDP; :mod:`jaxmdp.analysis.hardness` exact
hardness measures (gain, bias span, diameter, mixing time, gaps, lower-bound constant);
:mod:`jaxmdp.analysis.statistics` confidence intervals and comparisons of regret
(NumPy/SciPy, outside ``jit``).
"""
