"""What the judge client raises for a fleet that cannot take queries: none of them is a fault
of the submission being scored, so callers retry (scoring.tasks) or fail the run on our side."""


class FleetUnavailable(RuntimeError):
    """Every judge endpoint has been down for longer than the fleet is allowed to wait."""


class Misconfigured(Exception):
    """An endpoint is not set up to serve our queries (judge.fleet.MISCONFIGURED_STATUSES)."""


class LeaseError(FleetUnavailable):
    """The Redis server holding the slot leases cannot be reached: no query can be sent
    without breaking the fleet-wide cap, which is an outage like a fleet that is down."""
