"""Talking to the judge fleet: the client (fleet, leases, streamed bodies), what a vLLM server of
Qwen3-Omni accepts, its simulator and endpoint state. It knows no benchmark."""
