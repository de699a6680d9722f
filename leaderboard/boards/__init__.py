"""The boards' data: a board's state and what is kept per state, its rows, ranks and rank
ranges, and the figures and files every page and the read API are made of (no HTTP here)."""
