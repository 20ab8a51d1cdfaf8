"""Reading what the user wrote: eval.yaml and its JSON Schema, settings layering, secrets,
case sources (datasets) and prompt templates, validated into typed objects before anything runs."""
