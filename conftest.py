# The evaluation suite's pytest wiring: options, items and reporting (plugins/), and the
# fixtures that build a start and run the agent on it (fixtures/).
pytest_plugins = ["plugins.residual", "fixtures.starts", "pytester"]
