"""The panel's operations: who may rate, what a task shows its rater, answering it under the
listening rule, and staff removing a rater with their answers (audited)."""

from __future__ import annotations

import random

import soundfile
from django.conf import settings
from django.db import transaction
from django.http import Http404
from django.urls import reverse

from accounts.verification import verification_needed
from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from leaderboard.explorer_selectors import audio_file
from panel.models import PanelAnswer, PanelAssignment, PanelRemoval
from scoring.kinds.mmae import rules as mmae
from submissions.models import Submission

# A sum of play-head steps falls short of an audio's length by rounding (0.49999 s of 0.5 s);
# static/js/panel.js forgives the same.
LISTEN_SLACK = 0.01


def rater_problem(user) -> str | None:
    """Why the user may not rate, or None: a confirmed email address is needed (as for
    uploads), and a rater staff removed stays removed."""
    if verification_needed(user):
        return (f"confirm your email address {user.email or '(none yet: add one)'} before "
                "rating: open the link emailed to you, or send a new one")
    if PanelRemoval.objects.filter(rater=user).exists():
        return "you were removed from the listening panel by staff"
    return None


def options(assignment: PanelAssignment) -> list[tuple[int, str]]:
    """The rubric's options as this rater sees them: (position in [right] + wrong, text),
    shuffled by rater and task, the same every time they are shown (a repeat too, so that
    it tests the rater, not the shuffle)."""
    spec = assignment.task.criterion.spec
    texts = [spec["right"], *spec["wrong"]]
    order = list(range(len(texts)))
    random.Random(f"panel:{assignment.rater_id}:{assignment.task_id}").shuffle(order)
    return [(i, texts[i]) for i in order]


def labels(assignment: PanelAssignment) -> list[str]:
    """The audios the rubric's question names (as the judge hears them: SPEC section 3)."""
    return mmae.question_labels(assignment.task.criterion.question)


def required_seconds(submission: Submission, item_key: str, label: str) -> float:
    """How long a rater must listen to one audio: its length, or PANEL_MIN_LISTEN_SECONDS
    when it is longer. An audio whose length cannot be read asks the full minimum."""
    path = audio_file(submission, item_key, label)
    try:
        length = soundfile.info(str(path)).duration if path is not None else None
    except (RuntimeError, soundfile.LibsndfileError):
        length = None
    minimum = settings.PANEL_MIN_LISTEN_SECONDS
    return minimum if length is None else min(float(length), minimum)


def task_payload(assignment: PanelAssignment) -> dict:
    """What the rater is shown: never the judge's votes, nor whether this is a repeat."""
    task = assignment.task
    submission, item = task.submission, task.criterion.item
    shown = labels(assignment)
    return {
        "task": task.id, "submission": submission.id, "item": item.key,
        "rubric": task.criterion.index,
        "instruction": _instruction(item.content),
        "question": task.criterion.question,
        "choices": [{"letter": mmae.LETTERS[n], "text": text}
                    for n, (_, text) in enumerate(options(assignment))],
        "audio": {label: reverse("leaderboard:submission-audio",
                                 args=[submission.id, item.key, label]) for label in shown},
        "listen": {label: required_seconds(submission, item.key, label) for label in shown},
    }


def _instruction(content: dict) -> str:
    return "\n".join(part["text"] for message in content.get("messages") or []
                     if isinstance(message, dict) for part in mmae.content_parts(message)
                     if part.get("type") == "text" and isinstance(part.get("text"), str))


def _listening_problems(assignment: PanelAssignment, listened) -> list[str]:
    if not isinstance(listened, dict):
        return ["listened: give the seconds heard of each audio, as {label: seconds}"]
    shown = labels(assignment)
    problems = [f"listened: this task has no audio {label!r} (its audio: {', '.join(shown)})"
                for label in listened if label not in shown]
    task = assignment.task
    for label in shown:
        heard = listened.get(label, 0)
        if isinstance(heard, bool) or not isinstance(heard, int | float):
            problems.append(f"listened: the seconds heard of audio {label!r} must be a number")
            continue
        needed = required_seconds(task.submission, task.criterion.item.key, label)
        if heard + LISTEN_SLACK < needed:
            problems.append(f"listened: audio {label!r} heard for {heard:.1f} s; listen to it "
                            f"for at least {needed:.1f} s before answering")
    return problems


def panel_answer(*, rater, task_id: int, choice, listened) -> PanelAnswer:
    """Answer the rater's open assignment of the task. Refused (nothing stored) when the
    choice is not one of its letters or an audio was not listened to long enough; a task
    the rater was not given (or whose submission left the board) is a 404."""
    with transaction.atomic():
        assignment = (PanelAssignment.objects.select_for_update(of=("self",))
                      .select_related("task__criterion__item", "task__submission__benchmark")
                      .filter(task_id=task_id, rater=rater, answered=False,
                              task__submission__in=Submission.objects.published())
                      .exclude(task__submission__owner=rater).order_by("id").first())
        if assignment is None:
            if PanelAnswer.objects.filter(task_id=task_id, rater=rater).exists():
                raise ServiceError(f"task {task_id} is answered already", code="conflict")
            raise Http404(f"no task {task_id} waiting for your answer")
        shown = options(assignment)
        letters = mmae.LETTERS[:len(shown)]
        problems = [] if isinstance(choice, str) and len(choice) == 1 and choice in letters \
            else [f"choice: {choice!r} is not one of the letters {', '.join(letters)}"]
        problems += _listening_problems(assignment, listened)
        if problems:
            raise ServiceError(problems)
        position, text = shown[letters.index(choice)]
        answer = PanelAnswer.objects.create(
            assignment=assignment, task=assignment.task, rater=rater, repeat=assignment.repeat,
            choices=[t for _, t in shown], letter=choice, chosen=text, right=position == 0,
            listened={k: float(v) for k, v in listened.items()})
        PanelAssignment.objects.filter(id=assignment.id).update(answered=True)
    return answer


def panel_rater_remove(*, actor, rater, reason: str) -> PanelRemoval:
    """Remove a rater from the panel: every answer and assignment of theirs is deleted, so
    that they leave every figure, and they get no task again. Audited with the count."""
    reason = (reason or "").strip()
    if not reason:
        raise ServiceError("reason: say why the rater is removed (the audit log keeps it)")
    with transaction.atomic():
        if PanelRemoval.objects.filter(rater=rater).exists():
            raise ServiceError(f"{rater.username} was removed from the panel already",
                               code="conflict")
        answers = PanelAnswer.objects.filter(rater=rater)
        count = answers.count()
        answers.delete()
        PanelAssignment.objects.filter(rater=rater).delete()
        removal = PanelRemoval.objects.create(rater=rater, removed_by=actor, reason=reason,
                                              answers_removed=count)
        audit_record(actor=actor, action=AuditEvent.Action.PANEL_RATER, obj=removal,
                     before={"rater": rater.username, "answers": count},
                     after={"removed": True, "answers": 0}, reason=reason)
    return removal
