"""Alembic's environment for the results store: always online, on the connection that
:func:`busprobe.store.migrate.upgrade` hands over (``config.attributes["connection"]``)."""

from alembic import context

from busprobe.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
