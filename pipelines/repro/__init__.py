"""Reproduction of the LoPub paper's evaluation (Ren et al., IEEE TIFS 2018); see docs/RESULTS.md."""
