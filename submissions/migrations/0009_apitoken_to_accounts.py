# ApiToken now belongs to the accounts app (accounts 0001), on the same table: removed from
# this app's migration state only.
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0008_normalise_names'),
        ('accounts', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ApiToken')],
            database_operations=[],
        ),
    ]
