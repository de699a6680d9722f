"""The panel's operations: who may rate, what a task shows its rater (its rubric as the kind
puts it: Kind.panel_question, its audio under addresses of the task's own that name neither
submission nor system), sending that audio (recorded: the server's evidence of listening),
answering it under the listening rule, and staff removing a rater with their answers
(audited)."""

from __future__ import annotations

import random
import string
from datetime import datetime
from pathlib import Path

import soundfile
from django.conf import settings
from django.core import signing
from django.db import transaction
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from accounts.verification import verification_needed
from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from leaderboard.boards.explorer_selectors import audio_file
from panel import pool
from panel.models import PanelAnswer, PanelAssignment, PanelRemoval, PanelTask
from scoring.kinds import get_kind
from scoring.kinds.base import PanelQuestion
from submissions import withheld as withheld_rule
from submissions.models import Submission

# A sum of play-head steps falls short of an audio's length by rounding (0.49999 s of 0.5 s);
# static/js/panel.js forgives the same.
LISTEN_SLACK = 0.01

# The options' letters as a rater sees them, in the order shown.
LETTERS = string.ascii_uppercase

# What signs a task's audio address (a rater's assignment and the audio's label).
AUDIO_SALT = "panel.audio"


def rater_problem(user) -> str | None:
    """Why the user may not rate, or None: a confirmed email address is needed (as for
    uploads), and a rater staff removed stays removed."""
    if verification_needed(user):
        return (f"confirm your email address {user.email or '(none yet: add one)'} before "
                "rating: open the link emailed to you, or send a new one")
    if PanelRemoval.objects.filter(rater=user).exists():
        return "you were removed from the listening panel by staff"
    return None


def panel_question(task: PanelTask) -> PanelQuestion:
    """The task's rubric as its benchmark's kind puts it to a rater, about the submission's
    output of the item."""
    item, run = task.criterion.item, task.submission.current_run
    output = run.outputs.get(item.key) if run is not None else None
    return get_kind(task.benchmark.kind).panel_question(item.as_rows(), task.criterion.index,
                                                        output)


def options(assignment: PanelAssignment, question: PanelQuestion) -> list[tuple[int, str]]:
    """The question's options as this rater sees them: (position in the kind's order, whose
    first says the output passes; text), shuffled by rater and task, the same every time they
    are shown (a repeat too, so that it tests the rater, not the shuffle)."""
    order = list(range(len(question.options)))
    random.Random(f"panel:{assignment.rater_id}:{assignment.task_id}").shuffle(order)
    return [(i, question.options[i]) for i in order]


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


def audio_url(assignment: PanelAssignment, label: str) -> str:
    """The address of one audio of the rater's task: signed, of this assignment alone, naming
    neither the submission nor its system."""
    token = signing.dumps([assignment.id, label], salt=AUDIO_SALT)
    return reverse("panel:task-audio", args=[token])


def task_payload(assignment: PanelAssignment) -> dict:
    """What the rater is shown: never the judge's votes, whether this is a repeat, nor which
    submission (or system) made the output."""
    task = assignment.task
    submission, item = task.submission, task.criterion.item
    question = panel_question(task)
    return {
        "task": task.id, "item": item.key, "rubric": task.criterion.index,
        "instruction": question.instruction,
        "question": question.question,
        "notes": list(question.notes),
        "choices": [{"letter": LETTERS[n], "text": text}
                    for n, (_, text) in enumerate(options(assignment, question))],
        "texts": [{"label": label, "text": text} for label, text in question.texts],
        "audio": {label: audio_url(assignment, label) for label in question.audio},
        "listen": {label: required_seconds(submission, item.key, label)
                   for label in question.audio},
    }


def _waiting(rater):
    """The rater's assignments waiting for an answer, of published submissions not theirs,
    locked, with what a task's audio and answer read."""
    return (PanelAssignment.objects.select_for_update(of=("self",))
            .select_related("task__criterion__item", "task__benchmark",
                            "task__submission__current_run")
            .filter(rater=rater, answered=False,
                    task__submission__in=Submission.objects.published())
            .exclude(task__submission__owner=rater))


def panel_audio(*, rater, token: str) -> Path:
    """The file behind a task's audio address, for the rater it was made for while their
    assignment waits for its answer (anyone else, or a bad signature: 404). Sending it is
    recorded on the assignment the first time: when, and how many bytes."""
    try:
        assignment_id, label = signing.loads(token, salt=AUDIO_SALT)
    except (signing.BadSignature, TypeError, ValueError):
        raise Http404("no such audio") from None
    with transaction.atomic():
        assignment = _waiting(rater).filter(id=assignment_id).first()
        if assignment is None or label not in panel_question(assignment.task).audio:
            raise Http404("no such audio waiting for you")
        task = assignment.task
        path = audio_file(task.submission, task.criterion.item.key, label)
        if path is None:
            raise Http404("no such audio")
        if label not in assignment.served:
            assignment.served = {**assignment.served, label: {
                "at": timezone.now().isoformat(), "bytes": path.stat().st_size}}
            assignment.save(update_fields=["served"])
    return path


def _served_problems(assignment: PanelAssignment, question: PanelQuestion) -> list[str]:
    """What the server saw of the rater's listening: each audio of the task sent to them (by
    `panel_audio`), at least its length (or PANEL_MIN_LISTEN_SECONDS) ago."""
    problems, now, task = [], timezone.now(), assignment.task
    for label in question.audio:
        sent = assignment.served.get(label)
        if sent is None:
            problems.append(f"audio {label!r} was never sent to you: play it from the task "
                            "(its address in the task) before answering")
            continue
        ago = (now - datetime.fromisoformat(sent["at"])).total_seconds()
        needed = required_seconds(task.submission, task.criterion.item.key, label)
        if ago + LISTEN_SLACK < needed:
            problems.append(f"audio {label!r} was sent to you {ago:.1f} s ago and takes "
                            f"{needed:.1f} s to hear: listen to it in full before answering")
    return problems


def _listening_problems(assignment: PanelAssignment, question: PanelQuestion,
                        listened) -> list[str]:
    if not isinstance(listened, dict):
        return ["listened: give the seconds heard of each audio, as {label: seconds}"]
    shown = question.audio
    problems = [f"listened: this task has no audio {label!r} (its audio: "
                f"{', '.join(shown) or 'none'})" for label in listened if label not in shown]
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
    choice is not one of its letters, or an audio was not listened to long enough: as the
    rater's page reports it, and as the server saw it (each audio sent to the rater, its
    length ago); a task the rater was not given (or whose submission left the board) is a
    404, one whose result left the pool (public since) a 409. The answer is right when it
    chose the option that says the output passes."""
    with transaction.atomic():
        assignment = _waiting(rater).filter(task_id=task_id).order_by("id").first()
        if assignment is None:
            if PanelAnswer.objects.filter(task_id=task_id, rater=rater).exists():
                raise ServiceError(f"task {task_id} is answered already", code="conflict")
            raise Http404(f"no task {task_id} waiting for your answer")
        task = assignment.task
        if not pool.in_pool(withheld_rule.withheld(task.benchmark,
                                                   submission_ids=[task.submission_id]),
                            task.submission_id, task.criterion.item_id, task.criterion_id):
            raise ServiceError(f"task {task_id} has left the panel's pool (its judge's verdict "
                               "is public now): it takes no answer", code="conflict")
        question = panel_question(task)
        shown = options(assignment, question)
        letters = LETTERS[:len(shown)]
        problems = [] if isinstance(choice, str) and len(choice) == 1 and choice in letters \
            else [f"choice: {choice!r} is not one of the letters {', '.join(letters)}"]
        problems += _listening_problems(assignment, question, listened)
        problems += _served_problems(assignment, question)
        if problems:
            raise ServiceError(problems)
        position, text = shown[letters.index(choice)]
        answer = PanelAnswer.objects.create(
            assignment=assignment, task=assignment.task, rater=rater, repeat=assignment.repeat,
            choices=[t for _, t in shown], letter=choice, chosen=text, right=position == 0,
            listened={k: float(v) for k, v in listened.items()})
        PanelAssignment.objects.filter(id=assignment.id).update(answered=True)
    pool.release_due(task.benchmark)
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
