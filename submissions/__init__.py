"""Uploads and who owns them: submitting (site, API, CLI), safe archive reading and validation,
who sees which submission (the one access-checked lookup), moderation and rescoring."""
