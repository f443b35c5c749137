"""Files in and out: event logs, snapshots, the HTML report."""
