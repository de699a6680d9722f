"""Upload a submission to any deployment's API and follow it to its end, over HTTP only."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from judge import families

TERMINAL = ("finished", "rejected", "failed", "cancelled")
FIGURES = ("IFR", "CR", "EMR")
RESULT_FILES = ("results.jsonl", "per_sample.json", "taxonomy.json")
# The server answers an upload only once it has stored it and checked the predictions file.
HTTP_TIMEOUT = httpx.Timeout(30.0, read=300.0)
# Polls that may fail in a row (network blips, a restarting server) before giving up.
MAX_POLL_FAILURES = 5


class Unreachable(CommandError):
    pass


class HttpError(CommandError):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class ProgressFile:
    """A binary file whose reads advance a tqdm bar by the bytes read.

    httpx streams a multipart file with read(64 KiB) calls and sizes the body (Content-Length)
    from fileno(), so nothing is read whole.
    """

    def __init__(self, handle, bar: tqdm):
        self.handle, self.bar = handle, bar

    def fileno(self) -> int:
        return self.handle.fileno()

    def tell(self) -> int:
        return self.handle.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        before = self.handle.tell()
        position = self.handle.seek(offset, whence)
        self.bar.update(position - before)
        return position

    def read(self, size: int = -1) -> bytes:
        chunk = self.handle.read(size)
        self.bar.update(len(chunk))
        return chunk


def problems(response: httpx.Response) -> list[str]:
    """The reasons in an error reply: the API's `errors` list, DRF's `detail`, or the text."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return [text[:500]] if text else []
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        return [str(e) for e in body["errors"]]
    if isinstance(body, dict) and "detail" in body:
        return [str(body["detail"])]
    if isinstance(body, dict):
        return [f"{field}: {value}" for field, value in body.items()]
    return [str(body)]


class Api:
    """The deployment's submissions API, authenticated with a token."""

    def __init__(self, url: str, key: str):
        self.url = url
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Token {key}"},
                                   timeout=HTTP_TIMEOUT)

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"cannot reach {self.url}: {type(exc).__name__}: "
                              f"{exc or 'no reply'}") from None
        if response.is_error:
            lines = "".join(f"\n  {line}" for line in problems(response))
            raise HttpError(f"HTTP {response.status_code} {response.reason_phrase} from "
                            f"{method} {response.request.url}{lines}", response.status_code)
        return response

    def json(self, method: str, path: str, **kwargs):
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise CommandError(f"{method} {response.request.url} did not answer JSON: "
                               f"{response.text[:200]!r}") from None


class Command(BaseCommand):
    help = (
        "Upload a submission to a deployment's API (POST /api/submissions/ with an API token) "
        "and follow it until it is finished, rejected, failed or cancelled. Exits 0 only when "
        "it finished."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True,
                            help="the deployment's address, e.g. https://board.example.org")
        parser.add_argument("--token", required=True, help="an API token (Account > Tokens)")
        parser.add_argument("--benchmark", required=True, help="benchmark slug, e.g. mmae")
        parser.add_argument("--model-name", required=True)
        parser.add_argument("--predictions", type=Path,
                            help="predictions.json or submission.jsonl (MMAE); a JSONL of "
                                 "uniq_id and response (AIR-Bench)")
        parser.add_argument("--audio", type=Path,
                            help="archive (.zip, .tar.gz) of the edited audio")
        parser.add_argument("--organisation")
        parser.add_argument("--link", help="paper or code")
        parser.add_argument("--parameters", help="e.g. 7B")
        parser.add_argument("--licence")
        parser.add_argument("--open-weights", action="store_true")
        parser.add_argument("--base-family", choices=[k for k, _ in families.FAMILIES],
                            help="the base model family the system is built on (a judge may "
                                 "favour its own family; 'other': none of them)")
        parser.add_argument("--align", action="store_true",
                            help="AIR-Bench foundation: have the judge map the responses the "
                                 "letter rule cannot read to an option")
        parser.add_argument("--description")
        parser.add_argument("--public", action="store_true",
                            help="show the scores on the public board")
        parser.add_argument("--publish-at", metavar="WHEN",
                            help="an embargo: scored now, public from this moment on (ISO "
                                 "8601, UTC unless an offset is given), shown nowhere before")
        parser.add_argument("--anonymous-until", metavar="WHEN",
                            help="an anonymous entry: shown as \"Anonymous submission N\" "
                                 "until this moment (ISO 8601, UTC unless an offset is given), "
                                 "then under its name")
        parser.add_argument("--no-wait", action="store_true",
                            help="return once uploaded instead of following the scoring")
        parser.add_argument("--poll-seconds", type=float, default=2.0,
                            help="seconds between two looks at the submission")
        parser.add_argument("--timeout", type=float, default=None,
                            help="stop following after this many seconds (the scoring goes on)")

    def handle(self, *args, **o):
        self.quiet = o["verbosity"] == 0
        url = self._check(o)
        api = Api(url, o["token"])
        with api.client:
            created = self._upload(api, o)
            submission_id = created["id"]
            self.stdout.write(f"submission {submission_id}: {created['status']}")
            if o["no_wait"]:
                self.stdout.write(f"follow it with GET {url}/api/submissions/{submission_id}/")
                return
            detail = self._follow(api, submission_id, o)
            self._report(api, detail)

    def _check(self, o) -> str:
        """The base URL; refuse bad options and missing files before any request."""
        url = o["url"].rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandError(f"--url {o['url']!r}: give an http(s) address, e.g. "
                               "https://board.example.org")
        if o["poll_seconds"] <= 0 or (o["timeout"] is not None and o["timeout"] <= 0):
            raise CommandError("--poll-seconds and --timeout must be above 0")
        if o["predictions"] is None and o["audio"] is None:
            raise CommandError("give --predictions, --audio, or both")
        for option in ("predictions", "audio"):
            path = o[option]
            if path is not None and not path.is_file():
                raise CommandError(f"--{option} {path}: no such file")
        return url

    def _bar(self, **kwargs) -> tqdm:
        # tqdm needs the raw stream: OutputWrapper.write ends every write with a newline.
        return tqdm(file=self.stderr._out, dynamic_ncols=True, disable=self.quiet, **kwargs)

    def _upload(self, api: Api, o) -> dict:
        paths = {field: o[field] for field in ("predictions", "audio") if o[field]}
        form = {"benchmark": o["benchmark"], "model_name": o["model_name"],
                "open_weights": str(o["open_weights"]).lower(),
                "public": str(o["public"]).lower()}
        if o["align"]:
            form["align"] = "true"
        for field in ("organisation", "link", "parameters", "licence", "base_family",
                      "publish_at", "anonymous_until", "description"):
            if o[field] is not None:
                form[field] = o[field]
        total = sum(path.stat().st_size for path in paths.values())
        with ExitStack() as stack:
            bar = stack.enter_context(self._bar(total=total, desc="uploading", unit="B",
                                                unit_scale=True, unit_divisor=1024))
            files = {field: (path.name, ProgressFile(stack.enter_context(open(path, "rb")), bar))
                     for field, path in paths.items()}
            return api.json("POST", "/api/submissions/", data=form, files=files)

    def _follow(self, api: Api, submission_id: int, o) -> dict:
        """Poll the submission until it reaches a terminal state, showing its progress."""
        path = f"/api/submissions/{submission_id}/"
        try:
            with self._bar(total=None, desc="waiting", unit="query") as bar:
                return self._poll(api, path, bar, o)
        except KeyboardInterrupt:
            raise CommandError(f"stopped following submission {submission_id}; it goes on on "
                               f"the server: GET {api.url}{path}") from None

    def _poll(self, api: Api, path: str, bar: tqdm, o) -> dict:
        deadline = time.monotonic() + o["timeout"] if o["timeout"] else None
        failures, status = 0, "uploaded"
        while True:
            try:
                detail = api.json("GET", path)
            except (Unreachable, HttpError) as exc:
                failures += 1
                if isinstance(exc, HttpError) and exc.status < 500 \
                        or failures >= MAX_POLL_FAILURES:
                    raise
                bar.set_postfix_str(f"retrying: {str(exc).splitlines()[0]}")
            else:
                failures, status = 0, detail["status"]
                self._show(bar, detail)
                if status in TERMINAL:
                    return detail
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise CommandError(f"still {status} after {o['timeout']:g} seconds; it goes on "
                                   f"on the server: GET {api.url}{path}")
            time.sleep(o["poll_seconds"] if left is None else min(o["poll_seconds"], left))

    @staticmethod
    def _show(bar: tqdm, detail: dict) -> None:
        progress = detail["progress"]
        if progress["total"] and bar.total != progress["total"]:
            bar.total = progress["total"]  # 0 until the scoring run exists
        bar.n = progress["done"]
        position = progress.get("queue_position")
        bar.set_postfix_str(f"queue position {position}" if position else "", refresh=False)
        bar.set_description_str(detail["status"])  # refreshes the bar

    def _report(self, api: Api, detail: dict) -> None:
        submission_id, status = detail["id"], detail["status"]
        self.stdout.write(f"submission {submission_id}: {status}")
        if status == "finished":
            self._figures(api, detail)
        elif status == "rejected":
            errors = (detail.get("report") or {}).get("errors") or ["(no reason given)"]
            raise CommandError(f"submission {submission_id} was rejected:"
                               + "".join(f"\n  {line}" for line in errors))
        elif status == "failed":
            raise CommandError(f"submission {submission_id} failed: "
                               f"{detail.get('failure') or '(no reason given)'}")
        else:
            raise CommandError(f"submission {submission_id} was cancelled")

    def _figures(self, api: Api, detail: dict) -> None:
        files = f"/api/submissions/{detail['id']}/files/"
        names = detail.get("files") or RESULT_FILES
        if "taxonomy.json" in names:
            overall = api.json("GET", files + "taxonomy.json").get("overall") or {}
        else:
            overall = detail.get("overall") or {}
        figures = "  ".join(f"{k} {overall[k]:.2f}" if overall.get(k) is not None else f"{k} -"
                            for k in detail.get("metrics") or FIGURES)
        coverage = detail.get("coverage")
        covered = f", coverage {coverage:.0%}" if coverage is not None else ""
        self.stdout.write(f"overall ({overall.get('n', '?')} samples{covered}): {figures}")
        failures = detail.get("failures") or {}
        if failures:
            self.stdout.write("failed queries: " + ", ".join(
                f"{kind} {n}" for kind, n in sorted(failures.items())))
        if any(run.get("simulated") for run in detail.get("runs", [])[:1]):
            self.stdout.write("NOTE: the judge was the simulator; these scores are simulated.")
        for name in names:
            self.stdout.write(f"download {name} with GET {api.url}{files}{name}")
