"""The Dagster shell's wiring: the job, schedules, sensors and the `Definitions` that load them.

Sits on `assets/` and `resources/`, which sit on the core (`pipeline/`). Nothing in the core imports this.
"""
