import asyncio
import os
import signal

from django.core.management.base import BaseCommand, CommandError

from judge import limits
from judge.simulator import (
    DEFAULT_MAX_AUDIO_SECONDS,
    DEFAULT_MODEL,
    KEEPALIVE_SECONDS,
    NOTICE,
    EveryPortDied,
    SimulatorConfig,
    serve,
)
from scoring.kinds import simulated_replies


def _ports(value: str) -> list[int]:
    try:
        ports = [int(p) for p in value.split(",") if p.strip()]
    except ValueError:
        raise CommandError(f"--ports {value!r}: give comma-separated port numbers") from None
    if not ports or any(not 0 < p < 65536 for p in ports) or len(set(ports)) != len(ports):
        raise CommandError(f"--ports {value!r}: give distinct port numbers from 1 to 65535")
    return ports


class Command(BaseCommand):
    help = (
        "Run the judge SIMULATOR (not a real model): an HTTP server speaking vLLM's OpenAI API "
        "(POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics) whose MMAE "
        "verdicts are hashes of the input, for development, tests, benchmarks and the demo. "
        "Scores it produces are simulated."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--ports", default="8001,8002", help="comma-separated ports")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--latency-ms", type=float, default=200.0,
                            help="time each request holds its slot")
        parser.add_argument("--slots", type=int, default=32,
                            help="requests in progress per port; the rest wait, as in vLLM")
        parser.add_argument("--fail-rate", type=float, default=0.0,
                            help="share of requests answered with HTTP 500")
        parser.add_argument("--garbage-rate", type=float, default=0.0,
                            help="share of replies that hold no parseable verdict, different "
                                 "each time (a misbehaving server)")
        parser.add_argument("--unreadable-rate", type=float, default=0.0,
                            help="share of queries (by a hash of the request) always answered "
                                 "with the same unparseable reply (a judge's own)")
        parser.add_argument("--slow-rate", type=float, default=0.0,
                            help="share of requests that take --slow-ms instead")
        parser.add_argument("--slow-ms", type=float, default=30000.0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--model", default=DEFAULT_MODEL, help="served model name")
        parser.add_argument("--record", action="store_true",
                            help="list every answered query at GET /simulator/stats (tests)")
        parser.add_argument("--api-key", default=None,
                            help="require `Authorization: Bearer KEY` on /v1/* (401 otherwise), "
                                 "as vLLM; default: the VLLM_API_KEY environment variable")
        parser.add_argument("--max-audio-seconds", type=float, default=DEFAULT_MAX_AUDIO_SECONDS,
                            help="longest audio item taken; longer is a 400 as vLLM's encoder "
                                 "cache refusal (default: what launch_qwen3_omni.sh's "
                                 f"--max-num-batched-tokens {limits.DEFAULT_BATCHED_TOKENS} takes)")
        parser.add_argument("--max-audios", type=int, default=limits.DEFAULT_MAX_AUDIOS,
                            help="most audio items in one prompt (vLLM's --limit-mm-per-prompt)")
        for flag, variable, field in (
                ("--max-audio-file-mb", "VLLM_MAX_AUDIO_CLIP_FILESIZE_MB", "max_audio_file_mb"),
                ("--max-audio-decode-seconds", "VLLM_MAX_AUDIO_DECODE_DURATION_S",
                 "max_audio_decode_seconds"),
                ("--max-audio-decode-bytes", "VLLM_MAX_AUDIO_DECODE_BYTES",
                 "max_audio_decode_bytes")):
            parser.add_argument(flag, type=int, default=getattr(SimulatorConfig, field),
                                help=f"vLLM 0.33's {variable}: longer or larger audio is "
                                     "refused with its 400 (default: the launch script's)")
        parser.add_argument("--max-model-len", type=int, default=SimulatorConfig.max_model_len,
                            help="the model length (vLLM's --max-model-len): a longer prompt, "
                                 "or max_tokens over it, is refused")
        parser.add_argument("--audio-cache-mb", type=float,
                            default=SimulatorConfig.audio_cache_mb,
                            help="vLLM's multimodal processor cache (--mm-processor-cache-gb): "
                                 "audio sent with a uuid is kept under it, up to this many MiB "
                                 "of data: URLs, least recently used out first; a request "
                                 "giving a uuid alone that is not kept is refused as vLLM's "
                                 "cache miss (0: nothing kept)")
        parser.add_argument("--refuse-unreadable-audio", action="store_true",
                            help="answer 400 to audio that is not a readable sound file, as "
                                 "vLLM does (by default it is passed unmeasured)")
        parser.add_argument("--die-after", type=int, default=None,
                            help="after N chat completions a port answers an empty 500 and "
                                 "stops listening, as vLLM after EngineDeadError; the process "
                                 "exits non-zero once every port has")
        parser.add_argument("--keep-alive-seconds", type=float, default=KEEPALIVE_SECONDS,
                            help="close idle keep-alive connections after this long (vLLM's "
                                 "VLLM_HTTP_TIMEOUT_KEEP_ALIVE default)")

    def handle(self, *args, **options):
        ports = _ports(options["ports"])
        try:
            config = SimulatorConfig(
                latency_ms=options["latency_ms"], slots=options["slots"],
                fail_rate=options["fail_rate"], garbage_rate=options["garbage_rate"],
                unreadable_rate=options["unreadable_rate"],
                slow_rate=options["slow_rate"], slow_ms=options["slow_ms"],
                seed=options["seed"], model=options["model"], record=options["record"],
                api_key=options["api_key"] or os.environ.get("VLLM_API_KEY", ""),
                max_audio_seconds=options["max_audio_seconds"], max_audios=options["max_audios"],
                max_audio_file_mb=options["max_audio_file_mb"],
                max_audio_decode_seconds=options["max_audio_decode_seconds"],
                max_audio_decode_bytes=options["max_audio_decode_bytes"],
                max_model_len=options["max_model_len"], audio_cache_mb=options["audio_cache_mb"],
                refuse_unreadable_audio=options["refuse_unreadable_audio"],
                die_after=options["die_after"], keepalive_seconds=options["keep_alive_seconds"],
                replies=simulated_replies(),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        asyncio.run(self._run(ports, config, options["host"]))

    async def _run(self, ports, config, host):
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        ready = asyncio.Event()
        server = asyncio.create_task(serve(ports, config, host=host, ready=ready, stop=stop))
        ready_or_failed = asyncio.create_task(ready.wait())
        await asyncio.wait({server, ready_or_failed}, return_when=asyncio.FIRST_COMPLETED)
        if server.done():
            ready_or_failed.cancel()
            try:
                server.result()
            except OSError as exc:
                raise CommandError(f"cannot listen: {exc}") from None
            return
        urls = ",".join(f"http://{host}:{p}" for p in ports)
        self.stdout.write(f"{NOTICE}\nlistening on {urls} (slots {config.slots}, latency "
                          f"{config.latency_ms:g} ms, model {config.model})\n"
                          f"--base_urls \"{urls}\"", ending="\n")
        self.stdout.flush()
        try:
            await server
        except EveryPortDied as exc:
            raise CommandError(f"{exc} (--die-after {config.die_after})") from None
