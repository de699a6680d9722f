from django.apps import AppConfig


class ChallengesConfig(AppConfig):
    name = "challenges"

    def ready(self):
        from challenges import disclosure
        from scoring import visibility

        # The rule of what a hidden-rubric benchmark shows to whom reads this app's
        # organizers and phases (scoring imports nothing above it).
        visibility.give_disclosure_rule(disclosure.level)
