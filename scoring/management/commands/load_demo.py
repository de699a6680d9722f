import json
import zipfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring import synthetic, synthetic_airbench
from scoring.judge_configs import judge_config_current
from scoring.kinds.airbench import rules as airbench
from scoring.services import BenchmarkFileError, benchmark_import

# Long enough for every segment the demo's rubrics name (up to output[1.0s:2.5s]): a rubric
# about a part of the clip that does not exist read as a scoring bug.
DEMO_SECONDS = 3.0


class Command(BaseCommand):
    help = (
        "Make the synthetic demo benchmarks (generated text and tones, labelled synthetic) and "
        "their demo submissions under VAR_DIR/demo, and import them: MMAE as `mmae-demo`, "
        "AIR-Bench's two tracks as `airbench-foundation-demo` and `airbench-chat-demo`. "
        "Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--samples", type=int, default=40)
        parser.add_argument("--root", type=Path, default=None)
        parser.add_argument("--slug", default="mmae-demo")

    def handle(self, *args, **options):
        root = options["root"] or settings.VAR_DIR / "demo"
        meta = root / "MMAE-meta.json"
        if not meta.exists():
            synthetic.write_benchmark(root, options["samples"], seed=7, seconds=DEMO_SECONDS)
            samples = json.loads(meta.read_text())
            for number, name in enumerate(("demo-system-a", "demo-system-b"), start=1):
                predictions = synthetic.write_system(
                    root, samples, name=name, seed=number, seconds=DEMO_SECONDS,
                    fmt="jsonl" if number == 2 else "predictions")
                _bundle(root, name, predictions)
        try:
            benchmark, created = benchmark_import(
                kind="mmae", path=meta, audio_root=root, slug=options["slug"],
                title="MMAE demo (synthetic data)", synthetic=True,
            )
        except BenchmarkFileError as exc:
            raise CommandError(str(exc)) from None
        state = "imported" if created else "already loaded"
        config = judge_config_current(benchmark)  # so the fleet page shows the judge at once
        self.stdout.write(f"demo benchmark {benchmark} {state}, judged by {config.name} "
                          f"({', '.join(config.base_urls)}); submissions to upload (one "
                          f"archive each, predictions and audio) are in {root / 'uploads'}")
        if options["slug"] == "mmae-demo":
            self._airbench(root)

    def _airbench(self, root: Path) -> None:
        """AIR-Bench's two tracks, small and synthetic, with two demo systems' predictions
        files each (JSONL: AIR-Bench answers in text, so no audio is uploaded)."""
        folder = root / "airbench"
        tracks = ((airbench.FOUNDATION, synthetic_airbench.FOUNDATION_META,
                   "AIR-Bench foundation demo (synthetic data)"),
                  (airbench.CHAT, synthetic_airbench.CHAT_META,
                   "AIR-Bench chat demo (synthetic data)"))
        if not (folder / synthetic_airbench.CHAT_META).exists():
            foundation = synthetic_airbench.write_foundation(folder, 3, seed=11)
            chat = synthetic_airbench.write_chat(folder, 3, seed=12)
            for number, right in ((1, 0.8), (2, 0.55)):
                name = f"demo-system-{'ab'[number - 1]}"
                synthetic_airbench.write_foundation_system(
                    foundation, root / "uploads" / f"airbench-foundation-{name}.jsonl",
                    seed=number, right=right)
                synthetic_airbench.write_chat_system(
                    chat, root / "uploads" / f"airbench-chat-{name}.jsonl", seed=number,
                    detail=right)
        for kind, meta, title in tracks:
            try:
                benchmark, created = benchmark_import(
                    kind=kind, path=folder / meta, audio_root=folder, slug=f"{kind}-demo",
                    title=title, synthetic=True)
            except BenchmarkFileError as exc:
                raise CommandError(str(exc)) from None
            judge_config_current(benchmark)
            self.stdout.write(f"demo benchmark {benchmark} "
                              f"{'imported' if created else 'already loaded'}; its "
                              f"predictions files are {root / 'uploads'}/{kind}-demo-system-"
                              "{a,b}.jsonl")


def _bundle(root: Path, name: str, predictions: Path) -> None:
    """One archive holding a demo system's predictions file and its edited audio."""
    (root / "uploads").mkdir(exist_ok=True)
    with zipfile.ZipFile(root / "uploads" / f"{name}.zip", "w") as archive:
        archive.write(predictions, predictions.name)
        for wav in sorted((root / "systems" / name).glob("*.wav")):
            archive.write(wav, wav.relative_to(root).as_posix())
