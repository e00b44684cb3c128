"""Nodes shared by the methods: each a small callable of (state, runtime) returning a partial update."""
