"""Results in the field's shared formats: a board row as an Every Eval Ever record (the
EvalEval coalition's schema, version SCHEMA_VERSION: the judge config with its model,
temperature and votes, the aggregation, the human panel's figures, intervals and a link to the
per-item files), and as a model repository's `.eval_results` YAML (the Hugging Face Hub's
format). Each record and YAML file is signed (config.signing).

Only what a visitor may learn of the board goes out (scoring.visibility, a visitor's level):
nothing below OVERALL, slices from SLICES, the panel's figures and the per-item files' link at
FULL; and only the board's published rows."""

from __future__ import annotations

import re
from datetime import UTC

import yaml

from config import signing
from leaderboard.boards import model_pages, selectors, state
from panel import judge_card
from scoring import visibility
from scoring.kinds import get_kind
from scoring.models import Benchmark
from submissions.models import Submission

SCHEMA_VERSION = "0.3.0"
SOURCE = "Audio Leaderboard"
# Where a record names its signature: the schema admits no field of its own at the top level,
# so the signature's three strings go in source_metadata.additional_details under these keys
# (what is signed is the record without them).
SIGNATURE_KEYS = ("signature_algorithm", "signature_key_id", "signature")
HF_MODEL = re.compile(r"^https?://(?:www\.)?huggingface\.co/([\w.-]+/[\w.-]+)/?$")


def _epoch(moment) -> str:
    return str(int(moment.timestamp()))


def _iso(moment) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def model_id(row: dict) -> str:
    """The model in the Hub's owner/name form: from its link when that is a Hub model page,
    else its author's username and its name."""
    found = HF_MODEL.match(row.get("link") or "")
    if found:
        return found.group(1)
    name = re.sub(r"[^\w.-]+", "-", row["model"]).strip("-") or str(row["model_id"])
    return f"{row['submitted_by'] or 'anonymous'}/{name}"  # no owner named: an anonymous entry


class Board:
    """What every record of one board shares, read once: its rows, runs, config, panel."""

    def __init__(self, benchmark: Benchmark, *, site: str, panel: str = ""):
        self.benchmark, self.site = benchmark, site.rstrip("/")
        self.kind = get_kind(benchmark.kind)
        self.level = visibility.disclosure(benchmark)
        self.rows = selectors.leaderboard_rows(benchmark=benchmark) \
            if self.level >= visibility.Disclosure.OVERALL else []
        self.submissions = {s.id: s for s in Submission.objects.filter(
            id__in=[r["submission"] for r in self.rows]).select_related(
            "current_run__judge_config")}
        self.changed_at = benchmark.board_changed_at
        # The judge card is made once per board state and panel state (`panel`: what changes
        # with the panel's answers), not once per record asked for.
        self.human = state.kept(state.board_state(benchmark), "eee-human", self._human,
                                parts=(panel,), shared=True) \
            if self.level >= visibility.Disclosure.FULL else {}

    def _human(self) -> dict[str, dict]:
        """judge config name -> its human panel figures, as strings (the judge card's)."""
        if not self.kind.has_panel:
            return {}
        found = {}
        for config in judge_card.judge_card(self.benchmark)["configs"]:
            human = config.get("human") or {}
            if not human.get("rubrics"):
                continue
            found[config["judge_config"]] = {
                "human_panel_rubrics": str(human["rubrics"]),
                "human_panel_raters": str(human["raters"]),
                **{f"human_panel_{key}": f"{human[key]:.4f}"
                   for key in ("agreement", "agreement_lo", "agreement_hi", "kappa",
                               "human_human") if human.get(key) is not None},
            }
        return found

    def url(self, path: str) -> str:
        return f"{self.site}{path}"

    def row(self, model: int) -> dict | None:
        return next((r for r in self.rows if r["model_id"] == model), None)


def record(board: Board, row: dict) -> dict:
    """One board row as a signed Every Eval Ever record."""
    benchmark, kind = board.benchmark, board.kind
    submission = board.submissions[row["submission"]]
    run = submission.current_run
    config = run.judge_config
    finished = run.status_times.get("finished")
    board_url = board.url(f"/b/{benchmark.slug}/")
    judge = {
        "model_info": {
            "name": run.judge_name, "id": config.judge_model,
            "inference_engine": {"name": "vLLM", "version": config.vllm_version},
            "additional_details": {
                "deployment_type": "self_deployed", "model_availability": "open_weights",
                "simulated": "true" if run.simulated else "false"}},
        "temperature": float(config.sampling.get("temperature", 0.0)),
        "additional_details": {"judge_config": config.name, "rounds": str(config.rounds),
                               "prompt_sha256": config.prompt_sha256,
                               "seed": str(config.seed)},
    }
    scoring_block = {
        "judges": [judge], "input_prompt": "\n\n".join(kind.prompts),
        **({"aggregation_method": "majority_vote"} if config.rounds > 1 else {}),
        "additional_details": {
            "votes_per_criterion": str(config.rounds), "ranking": kind.ranking_text,
            **board.human.get(config.name, {})},
    }
    slices = [{"dimension": state.OVERALL, "bucket": "", **{
        key: row.get(key) for key in ("n", *kind.metric_keys)},
        **{f"{m}_interval": row.get(f"{m}_interval") for m in kind.metric_keys}}]
    if board.level >= visibility.Disclosure.SLICES:
        slices += [s for s in model_pages.slice_rows(run.id, kind)
                   if s["dimension"] != state.OVERALL]
    results = []
    for part in slices:
        overall = part["dimension"] == state.OVERALL
        where = "" if overall else \
            f" ({kind.dimension_label(part['dimension'])} = {part['bucket']})"
        for metric in kind.metrics:
            value = part.get(metric.key)
            if metric.count or value is None:
                continue
            interval = part.get(f"{metric.key}_interval")
            details = {"items": str(part["n"])}
            if overall and row.get("rank") is not None:
                details["rank"] = str(row["rank"])
                if row.get("rank_range"):
                    details["rank_range"] = f"{row['rank_range'][0]}-{row['rank_range'][1]}"
            uncertainty = {"num_samples": int(part["n"])}
            if interval is not None:
                uncertainty.update(confidence_interval={
                    "lower": float(interval[0]), "upper": float(interval[1]),
                    "confidence_level": 0.95,
                    "method": f"bootstrap percentile, {kind.item_noun}s resampled"})
            results.append({
                "evaluation_result_id": f"{metric.key}:{part['dimension']}"
                                        + (f":{part['bucket']}" if not overall else ""),
                "evaluation_name": f"{benchmark.title}: {metric.label}{where}",
                "source_data": {
                    "dataset_name": benchmark.title, "source_type": "url", "url": [board_url],
                    "additional_details": {
                        "benchmark": benchmark.slug, "benchmark_version": str(benchmark.version),
                        "benchmark_sha256": benchmark.sha256,
                        "synthetic": "true" if benchmark.synthetic else "false"}},
                **({"evaluation_timestamp": finished} if finished else {}),
                "metric_config": {
                    "evaluation_description": metric.definition,
                    "metric_id": f"{kind.name}.{metric.key.lower()}",
                    "metric_name": metric.label, "metric_kind": "pass_rate",
                    "metric_unit": "percent" if kind.scale == 100 else "points",
                    "lower_is_better": False, "score_type": "continuous",
                    "min_score": 0, "max_score": kind.scale,
                    # The judge once per figure, on its overall result: a slice's is the same
                    # judge's (its prompts are some 3 KB, and a board has dozens of slices).
                    **({"llm_scoring": scoring_block} if overall else {
                        "additional_details": {"judged_as": f"{metric.key}:overall"}})},
                "score_details": {"score": float(value), "details": details,
                                  "uncertainty": uncertainty},
            })
    links = {"board": board_url, "model_page": board.url(f"/m/{row['model_id']}/"),
             "signing_keys": board.url(signing.KEYS_PATH)}
    if board.level >= visibility.Disclosure.FULL:
        links["per_item_results"] = board.url(f"/api/leaderboards/{benchmark.slug}/items/"
                                              "?format=jsonl")
        links["submission"] = board.url(f"/s/{submission.id}/")
    body = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{benchmark.slug}/{row['model_id']}/{_epoch(board.changed_at)}",
        **({"evaluation_timestamp": finished} if finished else {}),
        "retrieved_timestamp": _epoch(board.changed_at),
        "source_metadata": {
            "source_name": f"{SOURCE}: {benchmark.title}", "source_type": "evaluation_run",
            "source_organization_name": SOURCE, "source_organization_url": board.site,
            "evaluator_relationship": "third_party",
            "additional_details": {"board_version": str(benchmark.board_version),
                                   **{f"link_{k}": v for k, v in links.items()}}},
        "eval_library": {"name": "mmae-board", "version": str(benchmark.board_version),
                         "additional_details": {"kind": kind.name}},
        "model_info": {
            "name": row["model"], "id": model_id(row),
            **({"developer": row["organisation"]} if row.get("organisation") else {}),
            "additional_details": {
                "deployment_type": "unknown",
                "model_availability": "open_weights" if row.get("open_weights")
                else "closed_weights",
                "submitted_by": row["submitted_by"],
                **{k: str(row[k]) for k in ("parameters", "licence", "base_family")
                   if row.get(k)}}},
        "evaluation_results": results,
    }
    return sign_record(body)


def sign_record(body: dict) -> dict:
    """The record with its signature in source_metadata.additional_details (SIGNATURE_KEYS),
    made over the record without them."""
    made = signing.signature(body)
    details = body["source_metadata"]["additional_details"]
    details.update(zip(SIGNATURE_KEYS, (made["algorithm"], made["key_id"], made["value"]),
                       strict=True))
    return body


def record_signature(record: dict) -> tuple[dict, dict]:
    """(the record as it was signed, its signature), for config.signing.verify."""
    unsigned = {**record, "source_metadata": {
        **record["source_metadata"], "additional_details": {
            k: v for k, v in record["source_metadata"]["additional_details"].items()
            if k not in SIGNATURE_KEYS}}}
    details = record["source_metadata"]["additional_details"]
    made = {"algorithm": details.get("signature_algorithm"),
            "key_id": details.get("signature_key_id"), "value": details.get("signature")}
    return unsigned, made


def eval_results(board: Board, row: dict) -> str:
    """A model repository's `.eval_results/<benchmark>.yaml`: one entry per ranking figure,
    overall, with its source (this board) and notes on the judge; its first lines, comments,
    carry the signature of the entries (as canonical JSON)."""
    benchmark, kind = board.benchmark, board.kind
    submission = board.submissions[row["submission"]]
    run = submission.current_run
    date = (run.status_times.get("finished") or _iso(submission.created_at))[:10]
    # The benchmark's Hub dataset; a synthetic one (the demo) is not it, nor is a kind with
    # none: then the board's own address stands for it, which the Hub will not take.
    real = kind.hub_dataset and not benchmark.synthetic
    hub = kind.hub_dataset if real else f"{board.site.split('://', 1)[-1]}/{benchmark.slug}"
    entries = []
    for metric in kind.metrics:
        if metric.count or row.get(metric.key) is None:
            continue
        interval = row.get(f"{metric.key}_interval")
        notes = (("" if real else "not the Hub's dataset: this board's own data; ")
                 + f"judged by {run.judge_name} (config {run.judge_config.name})"
                 + (f"; 95% interval {metric.format(interval[0])}-"
                    f"{metric.format(interval[1])}" if interval else "")
                 + (f"; rank {row['rank']}" if row.get("rank") is not None else ""))
        entries.append({
            "dataset": {"id": hub, "task_id": metric.key.lower()},
            "value": round(float(row[metric.key]), metric.digits),
            "date": date,
            "source": {"url": board.url(f"/b/{benchmark.slug}/"),
                       "name": f"{SOURCE}: {benchmark.title}"},
            "notes": notes,
        })
    made = signing.signature(entries)
    head = (f"# {row['model']} on {benchmark.title}, board version {benchmark.board_version}\n"
            f"# signature: {made['algorithm']} {made['key_id']} {made['value']}\n"
            f"# (over the entries below as canonical JSON; keys: "
            f"{board.url(signing.KEYS_PATH)})\n")
    return head + yaml.safe_dump(entries, sort_keys=False, allow_unicode=True)


def yaml_signature(text: str) -> tuple[list, dict]:
    """(the entries of an .eval_results file, the signature its comment carries)."""
    line = next(line for line in text.splitlines() if line.startswith("# signature: "))
    algorithm, key_id, value = line.removeprefix("# signature: ").split(" ")
    return yaml.safe_load(text), {"algorithm": algorithm, "key_id": key_id, "value": value}
