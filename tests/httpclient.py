"""One HTTP client for the tests' requests to the servers they start (judge simulators, web
processes, stand-ins). `httpx.get` and its kin make a client per call, and with it an SSL
context that loads every CA certificate: 20 ms of CPU a call, 10 s of the fast loop's CPU
(py-spy, 2026-12-07). Connections are not kept between requests, as with `httpx.get`: the
servers come and go between tests."""

import httpx

HTTP = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))
