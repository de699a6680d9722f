"""What a save of an account changes, for receivers that act on one field's change."""


def changes(sender, instance, field: str, update_fields=None) -> bool:
    """Whether saving `instance` (in a pre_save receiver) changes `field` from what the
    database holds: never for a new account, nor for a save of other fields (a log-in's
    last_login). One query otherwise."""
    if instance.pk is None or (update_fields is not None and field not in update_fields):
        return False
    stored = sender.objects.filter(pk=instance.pk).values_list(field, flat=True).first()
    return stored is not None and stored != getattr(instance, field)
