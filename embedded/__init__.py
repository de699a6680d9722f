"""The embedded default: `make run` starts the whole system on one machine with nothing but
Python (embedded.run). Not part of the production package."""
