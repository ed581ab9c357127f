# The evaluation suite's pytest wiring: options, items and reporting (plugins/), and the
# fixtures that build a start and run the agent on it (fixtures/). The project's own tests
# load what they need themselves (tests/conftest.py).
pytest_plugins = ["plugins.options", "plugins.residual", "fixtures.starts"]
