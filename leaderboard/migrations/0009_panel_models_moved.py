# The listening panel's models moved to the `panel` app (panel 0001 takes them into its state).
# Their tables stay, with their rows: only Django's idea of which app owns them changes.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0008_rank_order'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='PanelAnswer'),
                migrations.DeleteModel(name='PanelAssignment'),
                migrations.DeleteModel(name='PanelTask'),
                migrations.DeleteModel(name='PanelRemoval'),
            ],
            database_operations=[],
        ),
    ]
