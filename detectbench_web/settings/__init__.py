"""Settings package: `base` reads everything from the environment; `test` adds the test defaults."""
