"""manage.py signing_key_rotate: a new key signs exported results and snapshots from now on
(config.signing); the current one is retired, and stays published so that what it signed
still verifies."""

from django.core.management.base import BaseCommand

from config import signing


class Command(BaseCommand):
    help = "Make a new signing key; the current one is retired (still published)."

    def handle(self, *args, **options):
        entry = signing.rotate()
        self.stdout.write(f"signing key {entry['key_id']} made {entry['created']}; "
                          f"published at {signing.KEYS_PATH} with every earlier key")
