"""Triggers that run in Airflow's triggerer (deferrable operators wait on them)."""
