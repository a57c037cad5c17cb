"""The semantic model by concept, one module each (docs/WRITING_RULES.md,
"Where the model lives"). The rest of the model still lives in
``engine/semantic*.py`` and ``engine/flow*.py`` and moves here concept by concept."""
