"""Analysis of MDPs: how hard an instance is to learn (hardness measures)."""
