"""What the provider reports to Airflow's metrics (``epoch_metrics``); task-side only."""
