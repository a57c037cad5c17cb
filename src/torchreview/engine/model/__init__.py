"""The semantic model by concept, one class a module, composed by
``engine/semantic.py`` (``SemanticModel``) and ``engine/flow.py`` (``Flow``);
docs/WRITING_RULES.md, "Where the model lives", maps them."""
