"""The store's schema revisions, oldest first (Alembic's ``down_revision`` chain)."""
