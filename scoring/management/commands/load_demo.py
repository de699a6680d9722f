import json
import zipfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring import synthetic
from scoring.judge_configs import judge_config_current
from scoring.services import BenchmarkFileError, benchmark_import

# Long enough for every segment the demo's rubrics name (up to output[1.0s:2.5s]): a rubric
# about a part of the clip that does not exist read as a scoring bug.
DEMO_SECONDS = 3.0


class Command(BaseCommand):
    help = (
        "Make the synthetic demo benchmark (generated text and tones, labelled synthetic) and "
        "its demo submissions under VAR_DIR/demo, and import it as `mmae-demo`. Idempotent."
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


def _bundle(root: Path, name: str, predictions: Path) -> None:
    """One archive holding a demo system's predictions file and its edited audio."""
    (root / "uploads").mkdir(exist_ok=True)
    with zipfile.ZipFile(root / "uploads" / f"{name}.zip", "w") as archive:
        archive.write(predictions, predictions.name)
        for wav in sorted((root / "systems" / name).glob("*.wav")):
            archive.write(wav, wav.relative_to(root).as_posix())
