"""The ledger's PostgreSQL store: one short transaction per call, SQL and migrations.

Nothing here decides what should happen to an epoch; that is
:class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`'s.
"""
