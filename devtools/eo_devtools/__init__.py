"""Development-only tools of airflow-provider-eo (not part of the provider, never shipped to Spark).

``eo_devtools.stack``: the local stack and the ``eo-stack`` CLI; ``eo_devtools.demo``: the demo.
"""
