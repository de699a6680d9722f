import hashlib
import secrets

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A personal API token. Only a hash of the key is stored; the key is shown once."""

    PREFIX_LENGTH = 8

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=PREFIX_LENGTH)
    key_hash = models.CharField(max_length=64, unique=True)  # serves every authentication
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Made by the submissions app before the tokens moved here; the table kept its name.
        db_table = "submissions_apitoken"
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, *, user, name: str) -> tuple["ApiToken", str]:
        key = secrets.token_hex(20)
        token = cls.objects.create(user=user, name=name, prefix=key[: cls.PREFIX_LENGTH],
                                   key_hash=cls.hash_key(key))
        return token, key

    @property
    def active(self) -> bool:
        return self.revoked_at is None
