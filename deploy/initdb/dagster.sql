-- Dagster's own state (runs, events, sensor cursors) in a database of its own on the same server
-- (docs/deploy.md: never the docforge store's). The postgres image runs this once, on an empty volume.
CREATE DATABASE dagster;
