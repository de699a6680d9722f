"""The read API of the boards."""
