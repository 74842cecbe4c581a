"""One benchmark harness: datasets x methods x epsilon x seeds -> a tidy table.

``datasets`` (sources by name), ``methods`` (lopub's releases, the baselines
and the central reference, scored once), ``runner`` (the grid, a time limit
per cell, tidy rows saved as CSV/Parquet), ``tables`` (seed means, wins /
ties / losses, Markdown).  Each benchmark is a short configuration of it.
"""
