"""What every layer may import: errors, stop reasons, usage, the event sink and the event schema,
redaction, truncation, atomic writes and JSON found in model replies."""
