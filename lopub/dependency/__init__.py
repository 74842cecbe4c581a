"""Correlation identification: mutual information, dependency graph (Alg. 4),
entropy pruning (Alg. 5), structure selection (the paper's phi rule, a
noise-aware test, a Chow-Liu tree), triangulation and junction trees.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Alg. 5, Eq. 24, Eq. 26.
"""
from lopub.dependency.cache import MarginalCache, query_source
from lopub.dependency.graph import (STRUCTURES, DependencyGraph, build_graph, dependency_graph, sorted_edges, tau,
                    threshold_matrix)
from lopub.dependency.junction import (JunctionTree, budgeted_junction_tree, elimination_order, junction_tree,
                       running_intersection)
from lopub.dependency.mi import entropy, mutual_information, pair_tests, pairwise_mi
from lopub.dependency.pruning import pruned_dependency_graph
from lopub.dependency.structure import structure_graph

__all__ = [
    "MarginalCache", "query_source", "DependencyGraph", "build_graph", "dependency_graph",
    "sorted_edges", "tau", "threshold_matrix", "JunctionTree", "budgeted_junction_tree",
    "elimination_order", "junction_tree", "running_intersection", "entropy",
    "mutual_information", "pairwise_mi", "pruned_dependency_graph", "STRUCTURES", "structure_graph",
    "pair_tests",
]
