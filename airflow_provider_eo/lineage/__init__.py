"""OpenLineage for the write and commit tasks (docs/lineage.md).

Nothing here imports OpenLineage at module level: the provider runs without
``apache-airflow-providers-openlineage``; only the extraction the OpenLineage listener
calls (``get_openlineage_facets_on_complete``) imports it.
"""
