"""Published datasets rebuilt from their sources: a manifest in the repository, the files fetched."""
