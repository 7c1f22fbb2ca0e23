"""Independent NumPy/SciPy loops of jaxmdp's agents, the references the tests compare with.

They share no code with jaxmdp (only their command lines read an environment's arrays
from ``jaxmdp.envs``): one loop per agent, one replication and one round at a time, and
one exact average-reward policy iteration for all of them.

* :mod:`tests.reference.mdp`: the MDPs, policy iteration, the true MDP's gain and gaps;
* :mod:`tests.reference.indices`: the KL and L1 indices by SciPy's scalar solvers;
* :mod:`tests.reference.paper`: MDP-UCB, MDP-DMED, OLP and MDP-PS;
* :mod:`tests.reference.ucrl`: UCRL2 and KL-UCRL, under jaxmdp's rules or the published
  code's;
* :mod:`tests.reference.tsde`: TSDE;
* :mod:`tests.reference.published`: UCRL3, UCRL2B, PSRL, optimistic Q-learning, IMED-RL
  and MED-RL as learner objects (the published code's interface and rules; IMED-RL also
  under jaxmdp's), and the driver of every published rule set.

The tests import them as ``from tests.reference import paper`` (the repository root is on
pytest's ``pythonpath``); the benchmark scripts time them against ``jaxmdp.simulate``.
Each module with a command line runs from the repository root, e.g.
``python -m tests.reference.paper --help``.
"""
