"""Names cannot impersonate: look-alike spellings are normalised (NFKC, no hidden characters,
one space) wherever an author gives a name, and a model name that looks like another author's
on the same benchmark is refused, on the form, the API and at once from many clients."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from config.errors import ServiceError
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark
from submissions.models import ModelEntry, Submission
from submissions.moderation import submission_set_public
from submissions.names import name_normalise, name_skeletons
from tests.concurrent import at_once, statuses
from tests.conftest import CAST_PASSWORD, cast_member

TAKEN = ("the name 'Alice Editor' is taken on this benchmark by another author's public model "
         "(names that look alike count as the same)")
# Each shows as "Alice Editor" (or nearly: in another case, or a capital I for a small l).
LOOK_ALIKES = [
    "\u0410lice Editor",  # Cyrillic capital A
    "Alice\u200b Editor",  # a zero-width space
    "Alice\u00a0Editor",  # a no-break space
    "\u202eAlice Editor",  # a right-to-left override
    "Alice\u2066 Editor\u2069",  # a left-to-right isolate
    "A\ufefflice  Editor ",  # a zero-width no-break space, two spaces, one trailing
    "\uff21lice Editor",  # a fullwidth A (NFKC)
    "AIice Editor",  # a capital I for the small l
    "ALICE EDITOR",
    "Alice\ufe0f Editor",  # a variation selector (VS16)
    "Alice\u034f Editor",  # the combining grapheme joiner
    "Alice\u180b Editor",  # a Mongolian free variation selector
    "Alice Editor\u3164",  # the Hangul filler
    "\u115fAlice Editor",  # the Hangul choseong filler
    "Alice Editor\u2800",  # the Braille blank
]


@pytest.mark.parametrize("given, shown", [
    ("Alice Editor", "Alice Editor"),
    ("Alice\u200b\u200c\u200d\u2060 Editor", "Alice Editor"),
    ("Alice\u00a0\u2003\t\n Editor", "Alice Editor"),
    ("\u202eAlice Editor\u202c", "Alice Editor"),
    ("\u2067Alice\u2069 \u200eEditor\u200f", "Alice Editor"),
    ("Alice\ue000 Editor", "Alice Editor"),  # private use
    ("Alice\x07\x1b Editor", "Alice Editor"),  # control characters
    ("Ali\u0301ce", "Al\u00edce"),  # NFD -> NFC
    ("\uff21lice \u2460", "Alice 1"),  # compatibility forms (NFKC)
    ("  Alice   Editor  ", "Alice Editor"),
    ("\u0410lice", "\u0410lice"),  # a Cyrillic letter is kept: the skeleton tells it apart
    ("Alice\ufe0f\u034f\u180b\u180c\u180d Editor", "Alice Editor"),  # default-ignorable
    ("\u115f\u3164Alice\uffa0 Editor", "Alice Editor"),  # the Hangul fillers
    ("Alice\u2800\u2800Editor", "AliceEditor"),  # the Braille blank: nothing to read
])
def test_a_name_is_normalised(given, shown):
    assert name_normalise(given) == shown
    assert name_normalise(shown) == shown


@pytest.mark.parametrize("alike", LOOK_ALIKES)
def test_look_alike_names_share_a_skeleton(alike):
    assert name_skeletons("Alice Editor") & name_skeletons(name_normalise(alike))


@pytest.mark.parametrize("different", ["Alice Editor 2", "Alicia Editor", "Bob Editor"])
def test_different_names_do_not(different):
    assert not name_skeletons("Alice Editor") & name_skeletons(different)


@pytest.fixture
def alice(make_submission, author):
    return make_submission(author, name="Alice Editor", public=True)


@pytest.mark.parametrize("alike", ["Alice Editor", *LOOK_ALIKES])
def test_another_author_cannot_take_a_look_alike_name(alice, make_submission, other_author,
                                                      alike):
    with pytest.raises(ServiceError) as info:
        make_submission(other_author, name=alike)
    assert info.value.problems == [TAKEN.replace("Alice Editor", name_normalise(alike))]
    assert info.value.status == 409
    assert Submission.objects.filter(owner=other_author).count() == 0
    assert not ModelEntry.objects.filter(owner=other_author).exists()


def test_a_private_name_is_no_one_elses_business(make_submission, author, other_author,
                                               settings):
    """A private model's name changes no other author's answer: their look-alike upload is
    taken, public or private; the name is reserved by whichever is made public first."""
    settings.SUBMISSIONS_IN_FLIGHT = 3
    private = make_submission(author, name="CLI Editor")
    theirs = make_submission(other_author, name="CLI Ed\u0456tor", public=True)
    assert theirs.model.name == "CLI Ed\u0456tor"
    with pytest.raises(ServiceError) as info:
        submission_set_public(actor=author, submission=private, public=True)
    assert info.value.status == 409
    assert info.value.problems == [TAKEN.replace("Alice Editor", "CLI Editor")]
    assert not Submission.objects.get(pk=private.pk).public
    # Back to private, the other name frees it.
    submission_set_public(actor=other_author, submission=theirs, public=False)
    submission_set_public(actor=author, submission=private, public=True)
    assert Submission.objects.get(pk=private.pk).public


@pytest.mark.parametrize("why", ["hidden by staff", "rejected"])
def test_a_public_name_no_one_can_see_reserves_nothing(alice, make_submission, other_author,
                                                       why):
    if why == "hidden by staff":
        Submission.objects.filter(pk=alice.pk).update(hidden=True)
    else:
        Submission.objects.filter(pk=alice.pk).update(status=Submission.Status.REJECTED)
    assert make_submission(other_author, name="\u0410lice Editor").model.name \
        == "\u0410lice Editor"


def test_the_owner_uploads_again_under_the_name_or_a_look_alike(alice, make_submission,
                                                                author, settings):
    settings.SUBMISSIONS_IN_FLIGHT = 3
    again = make_submission(author, name="Alice\u00a0Editor\u200b")
    assert again.model_id == alice.model_id
    make_submission(author, name="\u0410lice Editor")
    assert Submission.objects.filter(owner=author).count() == 3


def test_the_name_is_free_on_another_benchmark(alice, make_submission, other_author,
                                               small_bench, tmp_path):
    meta = write_benchmark(tmp_path / "other", 6, seed=8)
    other, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "other",
                                slug="mmae-other")
    submission = make_submission(other_author, name="Alice Editor", benchmark=other)
    assert submission.model.name == "Alice Editor"


def test_a_new_version_of_the_benchmark_keeps_the_names(alice, make_submission, other_author,
                                                        small_bench, tmp_path):
    meta = write_benchmark(tmp_path / "v2", 7, seed=8)  # the same items and one more
    newer, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "v2", slug="mmae")
    assert newer.version == 2
    with pytest.raises(ServiceError, match="taken on this benchmark"):
        make_submission(other_author, name="\u0410lice Editor", benchmark=newer)


def test_the_model_and_organisation_are_stored_normalised(make_submission, author):
    submission = make_submission(author, name="\u202eEditor\u00a0 7B\u200b",
                                 organisation="Lab\u2066 of\u00a0Sound\u2069")
    model = ModelEntry.objects.get(pk=submission.model_id)
    assert (model.name, model.organisation) == ("Editor 7B", "Lab of Sound")


def test_a_name_of_hidden_characters_only_is_refused_naming_its_field(make_submission, author):
    with pytest.raises(ServiceError) as info:
        make_submission(author, name="\u200b\u202e\u00a0", organisation="\u2066\u2069")
    assert info.value.problems == [
        "the model name is empty once control, invisible and formatting characters are "
        "removed",
        "the organisation is empty once control, invisible and formatting characters are "
        "removed"]
    assert Submission.objects.count() == 0


# Through the API and the form.

def _files(bench):
    return {"predictions": SimpleUploadedFile("submission.jsonl", bench["jsonl"]),
            "audio": SimpleUploadedFile("audio.zip", bench["zip"])}


def _api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def test_the_api_refuses_a_look_alike_with_409(alice, small_bench, other_author):
    response = _api(other_author).post("/api/submissions/", {
        "benchmark": "mmae", "model_name": "\u0410lice Editor", **_files(small_bench)},
        format="multipart")
    assert response.status_code == 409
    assert response.json() == {"errors": [TAKEN.replace("A", "\u0410", 1)]}


def test_the_api_refuses_a_name_of_hidden_characters_naming_the_field(small_bench, author):
    response = _api(author).post("/api/submissions/", {
        "benchmark": "mmae", "model_name": "\u200b\u202e", "organisation": "\ue000",
        **_files(small_bench)}, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "model_name: the model name is empty once control, invisible and formatting "
        "characters are removed",
        "organisation: the organisation is empty once control, invisible and formatting "
        "characters are removed"]}
    assert Submission.objects.count() == 0


def test_the_api_stores_the_name_normalised(small_bench, author):
    response = _api(author).post("/api/submissions/", {
        "benchmark": "mmae", "model_name": "Edi\u0301tor\u200b\u00a0X", **_files(small_bench)},
        format="multipart")
    assert response.status_code == 201
    assert _api(author).get(f"/api/submissions/{response.json()['id']}/").json()["model"] \
        == "Ed\u00edtor X"


def test_the_form_refuses_a_look_alike(alice, small_bench, client, other_author):
    assert client.login(username="other_author", password=CAST_PASSWORD)
    response = client.post("/submit/", {"benchmark": "mmae", "model_name": "Alice\u200b Editor",
                                        **_files(small_bench)})
    assert response.status_code == 400
    assert ("the name &#x27;Alice Editor&#x27; is taken on this benchmark by another "
            "author&#x27;s public model (names that look alike count as the same)") \
        in response.content.decode()
    assert not Submission.objects.filter(owner=other_author).exists()


def test_the_form_refuses_a_name_of_hidden_characters(small_bench, client, author):
    assert client.login(username="author", password=CAST_PASSWORD)
    response = client.post("/submit/", {"benchmark": "mmae", "model_name": "\u2066\u2069",
                                        **_files(small_bench)})
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["model_name"] == [
        "the model name is empty once control, invisible and formatting characters are "
        "removed"]
    assert Submission.objects.count() == 0


@pytest.mark.slow
def test_authors_racing_for_look_alike_names_leave_one_owner(live_server, small_bench,
                                                             django_user_model, settings):
    """Eight authors upload look-alikes of one name at once over HTTP: one gets it, the
    others are told it is taken, and none answers 500."""
    settings.THROTTLE_UPLOAD = "1000/m"
    users = [cast_member(django_user_model, f"racer{i}", f"racer{i}@example.com")
             for i in range(8)]
    keys = [ApiToken.issue(user=user, name="t")[1] for user in users]
    names = ["Alice Editor", *LOOK_ALIKES][:8]

    def upload(client, i):
        return client.post(f"{live_server.url}/api/submissions/",
                           headers={"Authorization": f"Token {keys[i]}"},
                           data={"benchmark": "mmae", "model_name": names[i],
                                 "public": "true"},
                           files={"predictions": ("submission.jsonl", small_bench["jsonl"]),
                                  "audio": ("audio.zip", small_bench["zip"])})

    responses = at_once(upload, 8, clients=8)
    assert statuses(responses) == {201: 1, 409: 7}, [r.text for r in responses]
    assert Submission.objects.values("owner").distinct().count() == 1


def test_the_migration_normalises_stored_names_it_can(author, other_author):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("submissions.migrations.0008_normalise_names")
    ModelEntry.objects.bulk_create([
        ModelEntry(owner=author, name="\u202eAlice\u00a0Editor", organisation="Lab\u200b"),
        ModelEntry(owner=author, name="Bob Editor"),
        ModelEntry(owner=author, name="Bob\u200b Editor"),  # its normal form is taken
        ModelEntry(owner=other_author, name="\u2066\u2069"),  # nothing would be left
    ])
    migration.normalise_names(apps, None)
    assert sorted(ModelEntry.objects.values_list("owner__username", "name", "organisation")) \
        == [("author", "Alice Editor", "Lab"), ("author", "Bob Editor", ""),
            ("author", "Bob\u200b Editor", ""), ("other_author", "\u2066\u2069", "")]
