#!/usr/bin/env python
import os
import sys


def main():
    if sys.argv[1:2] == ["score"]:
        # The scorer is plain Python: no Django to set up before the first judge query.
        from scoring.cli import main as score

        sys.exit(score(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
