"""Session mode: an epoch's write tasks as one job on a long-lived Spark Connect server."""
