"""Adapters: how caiconform drives each library as a CAI producer and consumer."""
