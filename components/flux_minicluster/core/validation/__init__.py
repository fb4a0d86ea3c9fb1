"""Validation: every rule a MiniCluster spec must satisfy before anything is rendered.

Two jobs, one module each. ``fielderrors`` turns what pydantic found field by field into
readable problems (the user's own field paths, did-you-mean for unknown keys) and, for a spec
with such errors, validates the rest of it (``lenient_spec``). ``crossfield`` holds the rules
that read several fields at once (``check_semantics`` runs them all), which the models cannot
say. ``crossfield`` uses ``fielderrors``'s stand-in for a field that did not validate, never the
other way round.
"""
