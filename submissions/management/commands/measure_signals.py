from django.core.management.base import BaseCommand

from scoring.kinds import get_kind
from submissions.models import OutputSignal, Submission
from submissions.signals import measure_output_signals


class Command(BaseCommand):
    help = ("Queue the measuring of every output of submissions whose outputs are not all "
            "measured (those validated before signal cards existed); a worker measures them.")

    def handle(self, *args, **options):
        queued = 0
        for submission in Submission.objects.filter(current_run__isnull=False) \
                .select_related("benchmark", "current_run").iterator():
            if not get_kind(submission.benchmark.kind).outputs.files:
                continue
            measured = OutputSignal.objects.filter(submission=submission).count()
            if measured < len(submission.current_run.outputs):
                measure_output_signals.delay(submission.pk)
                queued += 1
        self.stdout.write(f"{queued} submission(s) queued for measuring")
