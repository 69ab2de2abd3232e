"""Dagster assets and checks: thin, each calls one core stage."""
