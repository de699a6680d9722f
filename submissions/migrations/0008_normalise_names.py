"""Model and organisation names stored before names were normalised (submissions.names), put in
their normal form. A name left empty by it, or one its owner already has in that form, stays
as it was (staff can rename it in the admin)."""

from django.db import migrations

from submissions.names import name_normalise


def normalise_names(apps, schema_editor):
    ModelEntry = apps.get_model("submissions", "ModelEntry")
    taken = set(ModelEntry.objects.values_list("owner_id", "name"))
    for model in ModelEntry.objects.only("id", "owner_id", "name", "organisation").iterator():
        name, organisation = name_normalise(model.name), name_normalise(model.organisation)
        if not name or (name != model.name and (model.owner_id, name) in taken):
            name = model.name
        if (name, organisation) != (model.name, model.organisation):
            taken.add((model.owner_id, name))
            ModelEntry.objects.filter(id=model.id).update(name=name, organisation=organisation)


class Migration(migrations.Migration):
    dependencies = [("submissions", "0007_submission_failed")]
    operations = [migrations.RunPython(normalise_names, migrations.RunPython.noop)]
