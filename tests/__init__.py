"""mechkit's tests, arranged like the package: ``symbolic/``, ``laws/``, ``accountants/``, ``individual/``, and
the cross-cutting ones here.  A package so that every test imports its helpers by one absolute name
(``tests.references``: independent references; ``tests.helpers``: shared helpers that use mechkit)."""
