"""Local HBase Thrift1 gateway: a development and test stand-in for HBase's Thrift server.

Run ``python -m airflow_provider_eo.devstack.hbase serve --host H --port P --data-dir D
[--transport buffered|framed] [--protocol binary|compact]``; unmodified happybase
clients talk to it as to HBase. Production uses real HBase (see ``docker/``).
See ``docs/hbase_gateway.md``.
"""
