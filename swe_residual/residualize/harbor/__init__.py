"""Harbor's formats: its trial results and jobs read back, its tasks exported, its checksums and Terminus-2 trials."""
