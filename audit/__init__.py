"""The audit log: an append-only record of every staff action (audit_record only writes it), the
staff audit page, and the public events a benchmark's changelog shows."""
