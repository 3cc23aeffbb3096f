"""Alembic's scripts for the results store: ``env.py`` and one module per revision in
``versions/``. :mod:`busprobe.store.migrate` runs them when a store is opened; a revision, once
released, is never edited (a database out there is at it): a change is a new revision."""
