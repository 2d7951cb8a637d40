"""API tokens move from DRF's plain-text table to knox's hashed one.

Each old key is hashed as knox hashes its own, so scripts keep working with the key
they have; then the plain-text table is dropped.
"""

from django.db import migrations

OLD_TABLE = "authtoken_token"


def hash_old_tokens(apps, schema_editor):
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    AuthToken = apps.get_model("knox", "AuthToken")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id FROM {OLD_TABLE}")  # noqa: S608
        rows = cursor.fetchall()
    AuthToken.objects.bulk_create(
        AuthToken(
            digest=hash_token(key),
            token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
            user_id=user_id,
            expiry=None,
        )
        for key, user_id in rows
    )
    schema_editor.execute(f"DROP TABLE {OLD_TABLE}")
    # Forget the old app's migrations too, so re-adding it would recreate its table.
    schema_editor.execute("DELETE FROM django_migrations WHERE app = 'authtoken'")


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0002_search_index"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(hash_old_tokens, migrations.RunPython.noop)]
