"""What visitors read: boards (state, rows, rank ranges), slices, pivots, charts, model, compare,
submission and status pages, the explorer, the read API and exports, reported results."""
