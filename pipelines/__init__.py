"""Runnable experiments and reproductions (import lopub only)."""
