"""A snapshot cites its state's stored items dataset (leaderboard.boards.dataset_files) in
place of a copy of it: each blob kept so far is written to the storage once, under that name."""

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import migrations, models


def blobs_to_files(apps, schema_editor):
    BoardSnapshot = apps.get_model("leaderboard", "BoardSnapshot")
    for snapshot in BoardSnapshot.objects.select_related("benchmark").iterator():
        benchmark = snapshot.benchmark
        version = snapshot.board_version
        name = (f"datasets/{benchmark.id}/board{version}/{benchmark.slug}-v{benchmark.version}"
                f"-board{version}-items.parquet")
        if not default_storage.exists(name):
            name = default_storage.save(name, ContentFile(bytes(snapshot.items)))
        BoardSnapshot.objects.filter(pk=snapshot.pk).update(items_file=name)


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0009_panel_models_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="boardsnapshot",
            name="items_file",
            field=models.CharField(default="", max_length=300),
            preserve_default=False,
        ),
        migrations.RunPython(blobs_to_files, migrations.RunPython.noop, elidable=True),
        migrations.RemoveField(
            model_name="boardsnapshot",
            name="items",
        ),
    ]
