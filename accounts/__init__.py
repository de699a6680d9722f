"""Who may do what: sign-up, log-in and email confirmation (django-allauth's hooks), the upload
gate, and API tokens with their authentication."""
