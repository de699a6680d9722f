from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        from accounts import epochs, password_changes

        epochs.connect()
        password_changes.connect()
