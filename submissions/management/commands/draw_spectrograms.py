from django.core.management.base import BaseCommand

from scoring import spectrogram_store
from scoring.models import Benchmark
from submissions.models import Submission
from submissions.services import spectrograms_folder


class Command(BaseCommand):
    help = ("Draw, here and now, every spectrogram not drawn yet: the inputs of every "
            "benchmark and the outputs of every submission that passed validation (those "
            "stored before spectrograms were, or whose task was lost). Workers draw them "
            "otherwise; drawing again changes nothing.")

    def handle(self, *args, **options):
        inputs = sum(spectrogram_store.draw_inputs(benchmark)
                     for benchmark in Benchmark.objects.exclude(audio_root="").order_by("pk"))
        outputs = 0
        for submission in (Submission.objects.exclude(current_run=None)
                           .select_related("benchmark", "current_run").order_by("pk")):
            outputs += spectrogram_store.draw_outputs(
                run=submission.current_run, benchmark=submission.benchmark,
                folder=spectrograms_folder(submission))
        self.stdout.write(f"drawn: {inputs} input and {outputs} output spectrogram(s)")
