"""Kept for backwards compatibility: the example MDPs now live in :mod:`jaxmdp.envs`.

``jm.examples.paper_mdp``, ``rigged_counts``, ``random_mdp`` and ``garnet`` are the same
functions as ``jm.envs.paper_mdp`` and so on; new code should use :mod:`jaxmdp.envs`
(and :func:`jaxmdp.envs.make` for the named environments).
"""

from jaxmdp.envs import garnet, paper_mdp, random_mdp, rigged_counts

__all__ = ["paper_mdp", "rigged_counts", "random_mdp", "garnet"]
