# Run.method loses its choices: the method registry (evaluation.prompting.methods.METHODS) is the list,
# checked in Run.clean() and by the launch service, so adding a method needs no migration.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='run',
            name='method',
            field=models.CharField(help_text='A name from the method registry, e.g. naive-3shot.', max_length=40),
        ),
    ]
