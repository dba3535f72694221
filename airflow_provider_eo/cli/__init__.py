"""Command-line adapters of the provider (``eo-ledger``)."""
