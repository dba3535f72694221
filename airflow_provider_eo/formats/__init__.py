"""Decoders of Kafka keys and values: ``decode(data: bytes) -> Any``, raising ``BadRecord``.

:mod:`.plain` holds json, string and bytes; :mod:`.factory` picks a decoder for a
pipeline's ``value_format``/``key_format``; Schema Registry formats live in :mod:`.registry`.
"""
