"""Output serializers of the panel and judge card API: the responses, as the schema shows."""

from rest_framework import serializers


class ChoiceOut(serializers.Serializer):
    letter = serializers.CharField()
    text = serializers.CharField()


class TextOut(serializers.Serializer):
    label = serializers.CharField(help_text="what the text is (the reference answer, the "
                                            "system's answer, ...)")
    text = serializers.CharField(allow_blank=True)


class TaskOut(serializers.Serializer):
    task = serializers.IntegerField()
    item = serializers.CharField()
    rubric = serializers.IntegerField(help_text="the rubric's index in its item")
    instruction = serializers.CharField(allow_blank=True,
                                        help_text="what the system was asked: its instruction "
                                                  "or question")
    question = serializers.CharField()
    notes = serializers.ListField(
        child=serializers.CharField(),
        help_text="the question's notation in words, one line each (a time slice of an audio, "
                  "as the judge is told to read it); none where it has none")
    choices = ChoiceOut(many=True, help_text="shuffled for this rater, the same every time")
    texts = TextOut(many=True, help_text="texts to read before answering, in order (none where "
                                         "the output is audio)")
    audio = serializers.DictField(child=serializers.CharField(),
                                  help_text="audio label (output, input1, ...) -> its URL, "
                                            "signed for this rater's task alone, naming no "
                                            "submission; none where the output is text")
    listen = serializers.DictField(
        child=serializers.FloatField(),
        help_text="audio label -> seconds to listen before answering: the audio's length, "
                  "or PANEL_MIN_LISTEN_SECONDS when it is longer")


class AnswerIn(serializers.Serializer):
    choice = serializers.CharField(help_text="the letter chosen, as the task showed it")
    listened = serializers.DictField(child=serializers.FloatField(),
                                     help_text="audio label -> seconds heard")


class AnswerOut(serializers.Serializer):
    task = serializers.IntegerField(source="task_id")
    choice = serializers.CharField(source="letter")
    answered_at = serializers.DateTimeField()


def _share(help_text: str):
    return serializers.FloatField(allow_null=True, help_text=help_text)


class HumanBlockOut(serializers.Serializer):
    rubrics = serializers.IntegerField(
        help_text="rubrics with 2 or more human answers and a majority (ties left out)")
    answers = serializers.IntegerField(help_text="first answers to these rubrics")
    raters = serializers.IntegerField()
    agreement = _share("share (0-1) of the counted rubrics where the raters' majority and "
                       "the judge's verdict match")
    agreement_lo = _share("bootstrap 95% interval resampling items (each with all its "
                          "rubrics), low end")
    agreement_hi = _share("bootstrap 95% interval resampling items, high end")
    kappa = _share("Cohen's kappa of the two verdicts over the counted rubrics")
    kappa_lo = _share("bootstrap 95% interval of kappa, low end")
    kappa_hi = _share("bootstrap 95% interval of kappa, high end")
    human_human = _share("agreeing pairs over all pairs of answers to the same rubric, "
                         "ties included: the ceiling a judge can be held to")


class HumanOut(HumanBlockOut):
    by = serializers.DictField(
        child=serializers.DictField(child=HumanBlockOut()),
        help_text="dimension (category, and the benchmark's own) -> bucket -> figures")


class DisagreementOut(serializers.Serializer):
    task = serializers.IntegerField()
    submission = serializers.IntegerField()
    model = serializers.CharField()
    item = serializers.CharField()
    rubric = serializers.IntegerField()
    category = serializers.CharField()
    question = serializers.CharField()
    human = serializers.BooleanField(help_text="the raters' majority: the output passes the "
                                               "rubric (the right choice) or not")
    judge = serializers.BooleanField(help_text="the judge's verdict on the rubric, as the "
                                               "benchmark's kind reads it from the item's result")
    right_answers = serializers.IntegerField()
    answers = serializers.IntegerField()
    url = serializers.CharField(help_text="the item page, where both verdicts are heard")


class RaterTestOut(serializers.Serializer):
    rater = serializers.IntegerField()
    rubrics = serializers.IntegerField(help_text="rubrics the rater shares with 2 or more "
                                       "other raters")
    judge_advantage = _share("share of those rubrics where the judge agrees with the other "
                             "raters at least as well as this rater does")
    rater_advantage = _share("share where this rater agrees with the others at least as "
                             "well as the judge")
    p_value = _share("one-sided paired t-test of judge_advantage - rater_advantage > "
                     "-epsilon, Benjamini-Yekutieli corrected over the raters")
    judge_wins = serializers.BooleanField(help_text="p_value at most alpha")


class ReplaceTestOut(serializers.Serializer):
    epsilon = serializers.FloatField(help_text="the tolerance the judge is allowed")
    alpha = serializers.FloatField()
    rubrics = serializers.IntegerField(help_text="rubrics with 3 or more raters")
    raters = RaterTestOut(many=True, help_text="each rater left out in turn (those sharing "
                          "at least 10 rubrics with 2 or more others)")
    winning_rate = _share("share of the raters the judge beats (null: fewer than 3 raters)")
    advantage_probability = _share("the judge's advantage probability, over the raters")
    verdict = serializers.ChoiceField(["yes", "no", "not enough answers"],
                                      help_text="can the judge stand in for a rater: a "
                                      "winning rate of at least a half")


class CalibratedOut(serializers.Serializer):
    judge = _share("share (0-1) of the category's rubrics the judge passed, over the latest "
                   "finished runs under this config of the submissions people rated")
    rubrics = serializers.IntegerField(help_text="the rubrics the judge's share rests on")
    labelled = serializers.IntegerField(help_text="of them, the rubrics people answered "
                                        "(2 or more answers and a majority)")
    corrected = _share("the share corrected by people's answers (prediction-powered "
                       "inference): judge + mean(human - judge) over the labelled rubrics; "
                       "null below 2 labelled rubrics")
    corrected_lo = _share("its 95% interval, low end: corrected - 1.96 sqrt(var(judge) / "
                          "rubrics + var(human - judge) / labelled)")
    corrected_hi = _share("its 95% interval, high end")


class JudgeFamilyOut(serializers.Serializer):
    family = serializers.CharField(help_text="the judge model's family (judge.families)")
    rubrics = serializers.IntegerField(help_text="counted rubrics (2 or more answers and a "
                                       "majority) of systems whose authors declared that family")
    needed = serializers.IntegerField(help_text="counted rubrics needed to give them apart")
    apart = serializers.BooleanField(help_text="whether human.by.judge_family gives the "
                                     "judge's agreement on them apart from other systems")


class ConfigCardOut(serializers.Serializer):
    judge_config = serializers.CharField()
    current = serializers.BooleanField(help_text="the config the board is scored under")
    simulated = serializers.BooleanField()
    runs = serializers.IntegerField()
    vote_unanimity = _share("percent of rubrics whose votes chose the same option in every "
                            "round, over all the config's runs; null where the kind asks no "
                            "multiple-choice question")
    position_bias = _share("mean score in the first pass minus the second, where the kind "
                           "judges twice with the answers' positions swapped")
    human = HumanOut(allow_null=True, help_text="null where the benchmark has no panel")
    replace_test = ReplaceTestOut(
        allow_null=True, help_text="the alternative annotator test (Calderon et al., ACL "
        "2025): can the judge replace a rater? null where the benchmark has no panel")
    calibrated = serializers.DictField(
        child=CalibratedOut(), help_text="rubric category -> the judge's pass rate and its "
        "correction by people's answers")
    disagreements = DisagreementOut(many=True)
    judge_family = JudgeFamilyOut(
        allow_null=True, help_text="systems of the judge's own family, which a judge may "
        "favour; null where the benchmark has no panel")


class PanelOut(serializers.Serializer):
    open = serializers.BooleanField(help_text="whether the benchmark has a listening panel")
    tasks = serializers.IntegerField()
    answers = serializers.IntegerField()
    raters = serializers.IntegerField()
    repeats = serializers.IntegerField(help_text="tasks a rater answered twice")
    self_consistency = _share("share of repeats answered with the same option")
    raters_per_task = serializers.IntegerField()
    min_listen_seconds = serializers.FloatField()
    pool_items = serializers.IntegerField(
        help_text="items of the panel's pool (one rubric each): tasks come from these only, "
                  "and public pages withhold a submission's results on them until it leaves "
                  "the pool")
    released = serializers.IntegerField(help_text="(submission, item) results that left the "
                                                  "pool once rated: the card counts these")
    spread_seconds = serializers.IntegerField(
        help_text="an answered task goes to no other rater for this long")
    release_seconds = serializers.IntegerField(
        help_text="rated results leave the pool at most this often")


class BatteryRowOut(serializers.Serializer):
    row = serializers.CharField(help_text="the diagnostic row: Identity, Noise, Silence, "
                                          "Reversed or Shuffled")
    figure = serializers.CharField(help_text="the kind's figure, e.g. IFR")
    measured = serializers.FloatField(allow_null=True, help_text="what the judge gave; null "
                                                                 "before the row is scored")
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                     help_text="its bootstrap 95% interval")
    expected = serializers.FloatField(help_text="the figure an honest judge gives")
    tolerance = serializers.FloatField()
    why = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["as expected", "uncertain", "deviates",
                                               "not scored"])
    run = serializers.IntegerField(allow_null=True)
    judge_config = serializers.CharField()
    simulated = serializers.BooleanField()
    missing = serializers.IntegerField(help_text="items the row has no output for")


class RankChangeOut(serializers.Serializer):
    submission = serializers.IntegerField()
    model = serializers.CharField()
    rank_a = serializers.IntegerField()
    rank_b = serializers.IntegerField()


class RankAgreementOut(serializers.Serializer):
    config_a = serializers.CharField()
    config_b = serializers.CharField()
    n = serializers.IntegerField(help_text="public submissions both configs scored")
    tau = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b of the rankings")
    tau_lo = serializers.FloatField(allow_null=True)
    tau_hi = serializers.FloatField(allow_null=True)
    changes = RankChangeOut(many=True, help_text="rows whose rank differs, most moved first")


class JudgeCardOut(serializers.Serializer):
    benchmark = serializers.CharField()
    panel = PanelOut()
    configs = ConfigCardOut(many=True)
    battery = BatteryRowOut(many=True, help_text="the robustness battery under the board's "
                                                 "judge config")
    rank_agreement = RankAgreementOut(many=True, help_text="each pair of judge configs that "
                                                           "scored the same public submissions")


class ItemRubricOut(serializers.Serializer):
    submission = serializers.IntegerField()
    rubric = serializers.IntegerField(help_text="the rubric's index in its item")
    human = serializers.BooleanField(allow_null=True,
                                     help_text="the raters' majority: the right choice or not; "
                                               "null for a tie")
    counted = serializers.BooleanField(help_text="2 or more answers and a majority: a rubric "
                                                 "the judge card counts")
    right_answers = serializers.IntegerField(help_text="first answers that said the output "
                                                       "passes (chose the right option)")
    answers = serializers.IntegerField(help_text="first answers")
    judge = serializers.BooleanField(allow_null=True,
                                     help_text="the rubric's score under the board's judge "
                                               "config; null where the run has none")
    disagrees = serializers.BooleanField(help_text="counted, and the two verdicts differ")
    label = serializers.CharField(help_text="the verdict as the item page shows it")
    anchor = serializers.CharField(help_text="the id of the verdict on the item page")


class ItemPanelOut(serializers.Serializer):
    benchmark = serializers.CharField()
    item = serializers.CharField()
    rubrics = ItemRubricOut(many=True, help_text="every rubric of a published submission's "
                                                 "output of the item with panel answers")


class CorrectedFigureOut(serializers.Serializer):
    label = serializers.CharField()
    judge = serializers.FloatField(allow_null=True, help_text="the judge's figure: the board's")
    corrected = serializers.FloatField(allow_null=True, help_text=(
        "corrected by prediction-powered inference with the panel's answers on this system "
        "(null below `needed` labelled samples)"))
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                     help_text="its 95% interval")
    samples = serializers.IntegerField(help_text="samples the judge's figure is over")
    labelled = serializers.IntegerField(help_text="of them, the samples people rated")
    rubrics = serializers.IntegerField(help_text="the counted rubrics people rated on them")


class CorrectedOut(serializers.Serializer):
    benchmark = serializers.CharField()
    model_id = serializers.IntegerField()
    model = serializers.CharField()
    submission = serializers.IntegerField(help_text="the row's submission")
    needed = serializers.IntegerField(help_text="labelled samples an axis needs")
    figures = serializers.DictField(child=CorrectedFigureOut(), help_text=(
        "per figure of the kind that a rubric counts toward (Kind.panel_axis); a figure of "
        "all an item's rubrics at once (an exact match) is not corrected"))
